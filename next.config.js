/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and pooled drivers must stay outside the server bundle.
  serverExternalPackages: ['better-sqlite3', 'pg'],
  // `next dev` serves its client assets to localhost only unless told; the dashboard is opened as 127.0.0.1.
  allowedDevOrigins: ['127.0.0.1'],
  // unauthorized() and forbidden() answer 401 and 403 from pages, server actions and route handlers alike.
  experimental: { authInterrupts: true },
};

export default nextConfig;
