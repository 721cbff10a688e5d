/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and pooled drivers must stay outside the server bundle.
  serverExternalPackages: ['better-sqlite3', 'pg'],
  // `next dev` serves its client assets to localhost only unless told; the dashboard is opened as 127.0.0.1.
  allowedDevOrigins: ['127.0.0.1'],
  // unauthorized() and forbidden() answer 401 and 403 from pages, server actions and route handlers alike.
  experimental: {
    authInterrupts: true,
    serverActions: {
      // Inputs, results and manual resolutions may be up to WAYBILL_MAX_BODY_BYTES (1 MiB by default), which
      // the actions check themselves and answer with a field error naming the limit. The form around such a
      // value (other fields, multipart framing) needs a little more, so Next's own cap sits a quarter above;
      // anything beyond it is refused by Next before an action runs. allowedOrigins stays unset: same origin only.
      bodySizeLimit: '1.25mb',
    },
  },
};

export default nextConfig;
