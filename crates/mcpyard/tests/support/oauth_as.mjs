// A real OAuth 2.1 / OpenID authorization server for the end-to-end tests:
// npm `oidc-provider` (a certified OpenID Provider) with the features the MCP
// authorization spec leans on: PKCE S256, resource indicators (RFC 8707:
// the access token's `aud` is the MCP server asked for), client credentials,
// refresh tokens rotated on every use, revocation (RFC 7009) and
// introspection. Access tokens for a resource are RS256 JWTs, checked by the
// MCP server against this server's JWKS.
//
// Usage: node oauth_as.mjs PORT   (a fixed port: the issuer URL names it)
// Environment:
//   OIDC_PROVIDER_DIR  the installed oidc-provider package (.tools/npm-oauth/...)
//   AS_M2M_SECRET      secret of the client-credentials client `gateway-m2m`
//   AS_ACCESS_TTL      lifetime in seconds of the access tokens of the person's
//                      client `gateway-user` (default 3600; the machine
//                      clients' always live an hour)
//   AS_M2M_JWKS        optional: public JWK set (JSON) of `gateway-jwt`, a
//                      client-credentials client authenticating with
//                      private_key_jwt
//
// Clients:
//   gateway-m2m   confidential, client_credentials, client_secret_basic
//   gateway-post  confidential, client_credentials, client_secret_post
//                 (same secret)
//   gateway-jwt   client_credentials, private_key_jwt (when AS_M2M_JWKS is set)
//   gateway-user  public native client, authorization_code + refresh_token,
//                 redirect http://127.0.0.1/callback on any port
//
// A person "logs in" by visiting the authorization URL: the interaction
// pages below sign in `alice` and grant what was asked at once, so a test
// (or its stand-in browser) only has to follow redirects with cookies.
//
// Prints `listening http://127.0.0.1:PORT` on stdout when ready. GET
// /test/stats answers the count of successful and failed grants by type.

import { generateKeyPairSync } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const port = Number(process.argv[2] ?? 0);
const providerDir = process.env.OIDC_PROVIDER_DIR;
if (!providerDir) {
  console.error('OIDC_PROVIDER_DIR is not set');
  process.exit(2);
}
const { default: Provider, errors } = await import(
  pathToFileURL(path.join(providerDir, 'lib/index.js')).href
);

const m2mSecret = process.env.AS_M2M_SECRET ?? 'm2m-secret-for-tests-only-000000';
const accessTtl = Number(process.env.AS_ACCESS_TTL ?? 3600);
const issuer = `http://127.0.0.1:${port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-signing', use: 'sig', alg: 'RS256' };

const RESOURCE_SCOPE = 'mcp:tools';

const clients = [
  {
    client_id: 'gateway-m2m',
    client_secret: m2mSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: RESOURCE_SCOPE,
  },
  {
    client_id: 'gateway-post',
    client_secret: m2mSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
    scope: RESOURCE_SCOPE,
  },
  {
    client_id: 'gateway-user',
    application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback'],
    token_endpoint_auth_method: 'none',
    scope: `openid offline_access ${RESOURCE_SCOPE}`,
  },
];
if (process.env.AS_M2M_JWKS) {
  clients.push({
    client_id: 'gateway-jwt',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: JSON.parse(process.env.AS_M2M_JWKS),
    scope: RESOURCE_SCOPE,
  });
}

// Resources this server issues tokens for: MCP servers on loopback only.
function isLoopbackResource(indicator) {
  try {
    const u = new URL(indicator);
    return u.protocol === 'http:' && u.hostname === '127.0.0.1';
  } catch {
    return false;
  }
}

const stats = { success: {}, error: {} };
const bump = (kind, grantType) => {
  stats[kind][grantType] = (stats[kind][grantType] ?? 0) + 1;
};

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [signingKey] },
  scopes: ['openid', 'offline_access', RESOURCE_SCOPE],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator, client) => {
        if (!isLoopbackResource(resourceIndicator)) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: RESOURCE_SCOPE,
          audience: resourceIndicator,
          accessTokenTTL: client.clientId === 'gateway-user' ? accessTtl : 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  // Every refresh gives a new refresh token and retires the one used.
  rotateRefreshToken: () => true,
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: {
    AccessToken: accessTtl,
    ClientCredentials: 3600,
    RefreshToken: 24 * 3600,
    Grant: 24 * 3600,
    Session: 24 * 3600,
    Interaction: 600,
    AuthorizationCode: 60,
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});
// Plain http on loopback: cookies without the Secure flag.
provider.proxy = false;

provider.on('grant.success', (ctx) => bump('success', ctx.oidc.params.grant_type));
provider.on('grant.error', (ctx) => bump('error', ctx.oidc.params?.grant_type ?? 'unknown'));

provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/test/stats') {
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(stats);
    return;
  }
  const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
  if (ctx.method === 'GET' && match) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session } = details;
    let result;
    if (prompt.name === 'login') {
      result = { login: { accountId: 'alice' } };
    } else {
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      if (d.missingResourceScopes) {
        for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
          grant.addResourceScope(indicator, scopes.join(' '));
        }
      }
      result = { consent: { grantId: await grant.save() } };
    }
    await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
    ctx.respond = false;
    return;
  }
  await next();
});

const server = provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
