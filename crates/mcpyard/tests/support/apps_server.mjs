// An MCP Apps server over stdio, built on @modelcontextprotocol/server and
// the helpers of @modelcontextprotocol/ext-apps: a `weather` tool whose
// view is `ui://weather/view.html`, offered with its view only to a client
// that declared the UI extension (`getUiCapability`), as the extension's
// documentation shows; otherwise a text-only `weather`. With `--extra`, an
// app-only `refresh` tool and a second view, `ui://panel/extra.html`.
//
//   node apps_server.mjs NODE_MODULES LABEL [--extra]
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, label, ...flags] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(modules, rel)).href);
const { McpServer } = await load('@modelcontextprotocol/server/dist/index.mjs');
const { StdioServerTransport } = await load('@modelcontextprotocol/server/dist/stdio.mjs');
const apps = await load('@modelcontextprotocol/ext-apps/dist/src/server/index.js');
const { registerAppTool, registerAppResource, getUiCapability, RESOURCE_MIME_TYPE } = apps;

const VIEW = 'ui://weather/view.html';
const EXTRA = 'ui://panel/extra.html';
const server = new McpServer({ name: `weather-${label}`, version: '1.0.0' });

// Registered before connecting, so the capabilities are declared.
server.registerTool('where', { description: 'Which server this is' }, async () => ({
  content: [{ type: 'text', text: `server ${label}` }],
}));
const html = (what) => `<!DOCTYPE html><html><body>${what} of ${label}</body></html>`;
registerAppResource(server, 'Weather view', VIEW, { description: 'The forecast' }, async () => ({
  contents: [{ uri: VIEW, mimeType: RESOURCE_MIME_TYPE, text: html('weather view') }],
}));
if (flags.includes('--extra')) {
  registerAppResource(server, 'Extra panel', EXTRA, {}, async () => ({
    contents: [{ uri: EXTRA, mimeType: RESOURCE_MIME_TYPE, text: html('extra panel') }],
  }));
}

const forecast = async () => ({
  content: [{ type: 'text', text: `sunny, from ${label}` }],
});
server.server.oninitialized = () => {
  const ui = getUiCapability(server.server.getClientCapabilities());
  if (ui?.mimeTypes?.includes(RESOURCE_MIME_TYPE)) {
    registerAppTool(
      server,
      'weather',
      { description: 'The forecast, with a view', _meta: { ui: { resourceUri: VIEW } } },
      forecast,
    );
    if (flags.includes('--extra')) {
      registerAppTool(
        server,
        'refresh',
        {
          description: 'Refreshes the view (for the app only)',
          _meta: { ui: { resourceUri: VIEW, visibility: ['app'] } },
        },
        async () => ({ content: [{ type: 'text', text: `refreshed by ${label}` }] }),
      );
    }
  } else {
    server.registerTool('weather', { description: 'The forecast, as text' }, forecast);
  }
};

await server.connect(new StdioServerTransport());
