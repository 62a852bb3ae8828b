// A real OAuth 2 / OpenID issuer for the resource-server tests:
// oauth2-mock-server (JWTs signed with real keys, served at /jwks), with the
// few things an MCP client needs that it leaves out:
// - dynamic client registration (RFC 7591) at /register;
// - the scope asked for at /authorize carried into the code's token;
// - `aud` set from the RFC 8707 `resource` parameter;
// - a `groups` claim.
// And test-only routes to mint tokens with chosen claims, to rotate keys,
// and to sign with a key the JWKS does not publish.
//
//   node oauth_issuer.mjs PATH/TO/oauth2-mock-server/dist/index.mjs PORT
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';

// Node closes an idle kept-alive connection after 5 s; a client of a loaded
// machine that reuses one just then sees "server disconnected". A minute
// takes that race out of the tests (the server is private to the mock).
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  this.keepAliveTimeout = 60_000;
  return listen.apply(this, args);
};

const [modulePath, port] = process.argv.slice(2);
const { OAuth2Server, OAuth2Issuer, Events } = await import(pathToFileURL(modulePath).href);

const url = `http://127.0.0.1:${port}`;
const server = new OAuth2Server();
server.issuer.url = url;
await server.issuer.keys.generate('RS256', { kid: 'k1' });

const scopeOfCode = new Map();
server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const asked = new URL(req.url, url).searchParams.get('scope');
  const code = redirect.url.searchParams.get('code');
  if (code && asked) scopeOfCode.set(code, asked);
});
server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const body = req.body ?? {};
  if (body.resource) token.payload.aud = body.resource;
  if (body.code && scopeOfCode.has(body.code)) {
    token.payload.scope = scopeOfCode.get(body.code);
    scopeOfCode.delete(body.code);
  }
  token.payload.groups = ['oauth-users'];
});
server.service.on(Events.BeforeWellKnownOpenIdConfiguration, (response) => {
  response.body.registration_endpoint = `${url}/register`;
});

const sendJson = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

server.service.addRoute('POST', '/register', (req, res) => {
  sendJson(res, 201, {
    ...(req.body ?? {}),
    client_id: randomUUID(),
    client_id_issued_at: Math.floor(Date.now() / 1000),
    token_endpoint_auth_method: 'none',
  });
});

// {kid?, expiresIn?, claims?}: a token from this issuer, claims merged last
// (so a test can set `iss`, `aud`, `exp`...).
server.service.addRoute('POST', '/test/token', async (req, res) => {
  const { kid, expiresIn, claims } = req.body ?? {};
  const token = await server.issuer.buildToken({
    kid,
    expiresIn,
    scopesOrTransform: (_header, payload) => Object.assign(payload, claims ?? {}),
  });
  sendJson(res, 200, { token });
});

// {kid}: a new signing key, published in the JWKS from now on.
server.service.addRoute('POST', '/test/rotate', async (req, res) => {
  const jwk = await server.issuer.keys.generate('RS256', { kid: req.body.kid });
  sendJson(res, 200, { kid: jwk.kid });
});

// {claims?}: a token in this issuer's name, signed by a key it never published.
const stranger = new OAuth2Issuer();
stranger.url = url;
await stranger.keys.generate('RS256', { kid: 'never-published' });
server.service.addRoute('POST', '/test/foreign-token', async (req, res) => {
  const { claims } = req.body ?? {};
  const token = await stranger.buildToken({
    scopesOrTransform: (_header, payload) => Object.assign(payload, claims ?? {}),
  });
  sendJson(res, 200, { token });
});

await server.start(Number(port), '127.0.0.1');
console.log(`issuer ${server.issuer.url} ready`);
const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
