/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and pooled drivers must stay outside the server bundle.
  serverExternalPackages: ['better-sqlite3', 'pg'],
};

export default nextConfig;
