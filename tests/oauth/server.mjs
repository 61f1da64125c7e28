// A real OAuth 2.1 / OpenID provider for the sign-in tests (oidc-provider), on 127.0.0.1.
//
// Environment: PORT (0 picks one), CLIENT_ID (the public native client, PKCE required, loopback
// redirect on any port), CLIENT_SECRET (if set, also a confidential client `<CLIENT_ID>-confidential`
// that authenticates with client_secret_post), ACCESS_TOKEN_TTL (seconds, default 30).
// Prints `ready http://127.0.0.1:<port>` once it listens. Interactions sign in as `test-user` and
// consent to everything on their own, so a test can follow redirects instead of driving a browser.
import http from 'node:http';

import Provider from 'oidc-provider';

const clientId = process.env.CLIENT_ID || 'aai-gateway-test';
const clientSecret = process.env.CLIENT_SECRET || '';
const accessTokenTtl = Number(process.env.ACCESS_TOKEN_TTL || 30);
const redirectUris = ['http://127.0.0.1/callback'];

const server = http.createServer();
await new Promise((resolve) => { server.listen(Number(process.env.PORT || 0), '127.0.0.1', resolve); });
const issuer = `http://127.0.0.1:${server.address().port}`;

const clients = [{
  client_id: clientId,
  application_type: 'native',
  token_endpoint_auth_method: 'none',
  redirect_uris: redirectUris,
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
}];
if (clientSecret) {
  clients.push({
    client_id: `${clientId}-confidential`,
    client_secret: clientSecret,
    application_type: 'native',
    token_endpoint_auth_method: 'client_secret_post',
    redirect_uris: redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  });
}

const provider = new Provider(issuer, {
  clients,
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access'],
  ttl: {
    AccessToken: accessTokenTtl,
    AuthorizationCode: 60,
    RefreshToken: 3600,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    Session: 3600,
  },
  issueRefreshToken: async () => true,
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  cookies: { keys: ['aai-gateway-test-cookie-key'] },
});

// Sign in and consent without a person: each interaction finishes at once and redirects back.
provider.use(async (ctx, next) => {
  if (ctx.method !== 'GET' || !/^\/interaction\/[^/]+$/.test(ctx.path)) {
    return next();
  }
  const { prompt, params, session, grantId } = await provider.interactionDetails(ctx.req, ctx.res);
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'test-user' } };
  } else {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { details } = prompt;
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scope] of Object.entries(details.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scope.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, {
    mergeWithLastSubmission: prompt.name !== 'login',
  });
  ctx.status = 303;
  ctx.redirect(returnTo);
  return undefined;
});

server.on('request', provider.callback());
process.on('SIGTERM', () => { server.close(); process.exit(0); });
console.log(`ready ${issuer}`);
