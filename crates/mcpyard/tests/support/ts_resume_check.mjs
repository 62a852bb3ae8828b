// A client on the TypeScript SDK, in its default mode, whose session's GET
// stream breaks when the replica holding it dies: the SDK reconnects on its
// own, with the id of the last event it read, and the session goes on on
// the other replica.
//
//   node ts_resume_check.mjs NODE_MODULES FIRST_URL SECOND_URL FIRST_PGID
//
// Its fetch plays the balancer: GET streams go to FIRST while it answers,
// the rest to SECOND, and a GET that FIRST cannot take goes to SECOND. The
// session subscribes to mem://a and touches it (the `watching` server):
// the update comes on the GET stream held by FIRST. Then FIRST's process
// group is killed, the stream breaks, and a second touch must reach the
// client once the SDK has reconnected. Prints one JSON summary: the GET
// requests (where, their status, the Last-Event-ID they carried) and the
// updates received.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, firstUrl, secondUrl, firstGroup] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(modules, rel)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StreamableHTTPClientTransport } = await load(
  '@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js',
);
const { ResourceUpdatedNotificationSchema } = await load(
  '@modelcontextprotocol/sdk/dist/esm/types.js',
);

const gets = [];
let firstAlive = true;
const balancer = async (_input, init = {}) => {
  const method = (init.method ?? 'GET').toUpperCase();
  const lastEventId = new Headers(init.headers).get('last-event-id');
  if (method === 'GET' && firstAlive) {
    try {
      const response = await fetch(firstUrl, init);
      gets.push({ to: 'first', status: response.status, lastEventId });
      return response;
    } catch {
      firstAlive = false;
    }
  }
  const response = await fetch(secondUrl, init);
  if (method === 'GET') gets.push({ to: 'second', status: response.status, lastEventId });
  return response;
};

const within = async (what, ms, done) => {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

const updates = [];
const errors = [];
const client = new Client({ name: 'ts-resume-check', version: '1.0.0' });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.push(n.params.uri);
});
const transport = new StreamableHTTPClientTransport(new URL(secondUrl), { fetch: balancer });
await client.connect(transport);
transport.onerror = (e) => errors.push(String(e));

await within('the GET stream on FIRST', 10000, () =>
  gets.some((g) => g.to === 'first' && g.status === 200),
);
for (let tries = 0; ; tries++) {
  try {
    await client.subscribeResource({ uri: 'mem://a' });
    break;
  } catch (e) {
    if (tries > 100) throw e;
    await new Promise((r) => setTimeout(r, 200));
  }
}
await client.callTool({ name: 'watch__touch', arguments: {} });
await within('the first update', 10000, () => updates.length >= 1);

process.kill(-Number(firstGroup), 'SIGKILL');
await within('a GET stream on SECOND', 20000, () =>
  gets.some((g) => g.to === 'second' && g.status === 200),
);
await client.callTool({ name: 'watch__touch', arguments: {} });
await within('the second update', 10000, () => updates.length >= 2);
// Time for a duplicate, were one replayed.
await new Promise((r) => setTimeout(r, 500));

console.log(JSON.stringify({ gets, updates, errors, protocol: transport.protocolVersion }));
await client.close();
