// A long-lived MCP client built on the official TypeScript SDK, driven by JSON lines on stdin.
//
//   node ts_client.mjs <url> [--header 'Name: value']... [--terminate-on-close] [--client-name N]
//                      [--answers JSON]
//
// The SDK is imported by absolute path: ESM ignores NODE_PATH, and this file does not live under
// the node_modules that hold the SDK. Its folder comes from the environment variable MCP_TS_SDK_DIR
// (tests/support/nodetools.py's ts_sdk_dir() sets it), else <project>/.tools/node_modules/@modelcontextprotocol/sdk
// relative to this file. The SDK's own imports (zod, eventsource-parser, ...) resolve from its
// location, so no cwd or NODE_PATH is needed.
//
// Protocol (one JSON object per line each way):
//   stdout, first line:  {"ready": true, "protocolVersion": ..., "serverInfo": ..., "capabilities": ...,
//                         "instructions": ..., "sessionId": ...}
//                        or, when connecting fails: {"ready": false, "error": "...", ...} and exit 1.
//   stdin commands:      {"id": 1, "op": "list_tools"}                      (also "cursor")
//                        {"id": 2, "op": "call_tool", "name": "x", "arguments": {...}}
//                        {"id": 3, "op": "list_resources"} / "list_resource_templates"
//                        {"id": 4, "op": "read_resource", "uri": "..."}
//                        {"id": 5, "op": "list_prompts"}
//                        {"id": 6, "op": "get_prompt", "name": "x", "arguments": {...}}
//                        {"id": 7, "op": "ping"} / "complete" ("ref", "argument", "context")
//                        {"id": 8, "op": "session"}  -> {sessionId, protocolVersion} of the transport now
//                        {"id": 9, "op": "terminate_session"}  -> HTTP DELETE of the session
//                        MCP Tasks (the SDK's experimental client, `client.experimental.tasks`):
//                        {"op": "call_tool_task", "name": "x", "arguments": {...}}
//                            -> {"messages": [...]}: the whole stream, taskCreated, taskStatus...,
//                               then result or error ({"type", "task"?, "result"?, "error"?})
//                        {"op": "start_tool_task", "name": "x", "arguments": {...}}
//                            -> the CreateTaskResult alone (the task is left running)
//                        {"op": "get_task" / "get_task_result" / "cancel_task", "taskId": "..."}
//                        {"op": "list_tasks"}                                (also "cursor")
//                        any command may carry "timeout_ms" (the SDK's per-request timeout, 60 s default)
//   stdout answers:      {"id": 1, "ok": true, "result": {...}}
//                        {"id": 2, "ok": false, "error": "<message>", "code": <JSON-RPC code>,
//                         "data": ..., "httpStatus": <status>, "errorType": "McpError"}
//   stdout events:       {"notification": {"method": ..., "params": ...}}
//                        {"transportError": "<message>"}    (the SDK's onerror, e.g. a lost GET stream)
//                        {"getStream": {"status": 200}}     (the GET SSE stream's response came:
//                                                            it is open, or refused with 405 ...)
//                        {"closed": true}                   (the SDK's onclose)
// Commands run concurrently; answers come in completion order and carry their id. On stdin EOF the
// client closes (the SDK's close() sends no DELETE; pass --terminate-on-close to DELETE the session
// first) and the process exits 0.

import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir =
    process.env.MCP_TS_SDK_DIR ||
    path.resolve(here, '..', '..', '.tools', 'node_modules', '@modelcontextprotocol', 'sdk');
const sdk = (rel) => import(pathToFileURL(path.join(sdkDir, 'dist', 'esm', rel)).href);

function write(obj) {
    process.stdout.write(JSON.stringify(obj) + '\n');
}

function usage(message) {
    write({ ready: false, error: `usage: ${message}` });
    process.exit(2);
}

function parseArgs(argv) {
    const options = { url: undefined, headers: {}, terminateOnClose: false, clientName: 'mcpapps-ts-client' };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === '--header' || arg === '-H') {
            const value = argv[++i];
            const colon = value === undefined ? -1 : value.indexOf(':');
            if (colon <= 0) usage(`--header needs 'Name: value', got ${JSON.stringify(value)}`);
            options.headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
        } else if (arg === '--terminate-on-close') {
            options.terminateOnClose = true;
        } else if (arg === '--client-name') {
            options.clientName = argv[++i];
        } else if (arg === '--answers') {
            try {
                options.answers = JSON.parse(argv[++i]);
            } catch (error) {
                usage(`--answers needs JSON, got ${JSON.stringify(argv[i])}`);
            }
        } else if (arg.startsWith('-')) {
            usage(`unknown option ${arg}`);
        } else if (options.url === undefined) {
            options.url = arg;
        } else {
            usage(`unexpected argument ${arg}`);
        }
    }
    if (options.url === undefined) usage("node ts_client.mjs <url> [--header 'Name: value']...");
    return options;
}

function describeError(error) {
    const answer = { error: error instanceof Error ? error.message : String(error) };
    if (error && typeof error === 'object') {
        answer.errorType = error.constructor?.name ?? error.name;
        if (McpError && error instanceof McpError) {
            answer.code = error.code;
            if (error.data !== undefined) answer.data = error.data;
        } else if (StreamableHTTPError && error instanceof StreamableHTTPError) {
            answer.httpStatus = error.code;
        } else if (typeof error.code === 'number') {
            answer.code = error.code;
        }
        if (error.cause) answer.cause = String(error.cause?.message ?? error.cause);
    }
    return answer;
}

const options = parseArgs(process.argv.slice(2));

let Client, StreamableHTTPClientTransport, McpError, StreamableHTTPError, CreateTaskResultSchema, CallToolResultSchema;
let CreateMessageRequestSchema, ElicitRequestSchema;
try {
    ({ Client } = await sdk('client/index.js'));
    ({ StreamableHTTPClientTransport, StreamableHTTPError } = await sdk('client/streamableHttp.js'));
    ({ McpError, CreateTaskResultSchema, CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema } =
        await sdk('types.js'));
} catch (error) {
    write({ ready: false, error: `cannot load the TypeScript SDK from ${sdkDir}: ${error.message}` });
    process.exit(1);
}

// Events seen before the ready line wait for it, so that it stays the first line.
let connected = false;
const early = [];
function event(obj) {
    if (connected) write(obj);
    else early.push(obj);
}

// Tell when the GET stream's response arrives: the SDK opens it in the background after
// notifications/initialized (and again on each reconnection), and a server notification sent
// before it is open has nowhere to go.
async function observingFetch(url, init) {
    const response = await fetch(url, init);
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') {
        event({ getStream: { status: response.status } });
    }
    return response;
}

const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: options.headers },
    fetch: observingFetch
});
// --answers '{"sampling": <CreateMessageResult>, "elicitation": <ElicitResult>}': the client
// declares those capabilities and answers every such request from the server with that result
// (and reports the request as an event: {"serverRequest": {"method", "params"}}).
const answers = options.answers ?? {};
const capabilities = {};
if (answers.sampling) capabilities.sampling = {};
if (answers.elicitation) capabilities.elicitation = {};
const client = new Client({ name: options.clientName, version: '1.0.0' }, { capabilities });
if (answers.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        event({ serverRequest: { method: request.method, params: request.params } });
        return answers.sampling;
    });
}
if (answers.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
        event({ serverRequest: { method: request.method, params: request.params } });
        return answers.elicitation;
    });
}
client.fallbackNotificationHandler = async (notification) => {
    write({ notification: { method: notification.method, params: notification.params } });
};

let closing = false;
client.onerror = (error) => {
    if (!closing) event({ transportError: error instanceof Error ? error.message : String(error) });
};
client.onclose = () => {
    if (connected && !closing) write({ closed: true });
};

try {
    await client.connect(transport);
} catch (error) {
    write({ ready: false, ...describeError(error) });
    process.exit(1);
}
connected = true;
write({
    ready: true,
    protocolVersion: transport.protocolVersion,
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
    sessionId: transport.sessionId
});
early.splice(0).forEach(write);

const ops = {
    list_tools: (c, o) => client.listTools(c.cursor ? { cursor: c.cursor } : undefined, o),
    call_tool: (c, o) => client.callTool({ name: c.name, arguments: c.arguments ?? {} }, undefined, o),
    list_resources: (c, o) => client.listResources(c.cursor ? { cursor: c.cursor } : undefined, o),
    list_resource_templates: (c, o) =>
        client.listResourceTemplates(c.cursor ? { cursor: c.cursor } : undefined, o),
    read_resource: (c, o) => client.readResource({ uri: c.uri }, o),
    list_prompts: (c, o) => client.listPrompts(c.cursor ? { cursor: c.cursor } : undefined, o),
    get_prompt: (c, o) => client.getPrompt({ name: c.name, arguments: c.arguments ?? {} }, o),
    ping: (c, o) => client.ping(o),
    complete: (c, o) => client.complete({ ref: c.ref, argument: c.argument, context: c.context }, o),
    session: async () => ({ sessionId: transport.sessionId ?? null, protocolVersion: transport.protocolVersion }),
    terminate_session: async () => {
        await transport.terminateSession();
        return {};
    },
    call_tool_task: async (c, o) => {
        const messages = [];
        const params = { name: c.name, arguments: c.arguments ?? {} };
        for await (const message of client.experimental.tasks.callToolStream(params, undefined, { ...o, task: {} })) {
            messages.push(message.type === 'error' ? { type: 'error', ...describeError(message.error) } : message);
        }
        return { messages };
    },
    start_tool_task: (c, o) =>
        client.request(
            { method: 'tools/call', params: { name: c.name, arguments: c.arguments ?? {}, task: {} } },
            CreateTaskResultSchema,
            o
        ),
    get_task: (c, o) => client.experimental.tasks.getTask(c.taskId, o),
    get_task_result: (c, o) => client.experimental.tasks.getTaskResult(c.taskId, CallToolResultSchema, o),
    list_tasks: (c, o) => client.experimental.tasks.listTasks(c.cursor, o),
    cancel_task: (c, o) => client.experimental.tasks.cancelTask(c.taskId, o)
};

async function run(line) {
    let command;
    try {
        command = JSON.parse(line);
    } catch (error) {
        write({ id: null, ok: false, error: `not a JSON command: ${error.message}` });
        return;
    }
    const id = command?.id ?? null;
    const op = ops[command?.op];
    if (!op) {
        write({ id, ok: false, error: `unknown op ${JSON.stringify(command?.op)}; known: ${Object.keys(ops).join(', ')}` });
        return;
    }
    const requestOptions = command.timeout_ms ? { timeout: command.timeout_ms } : undefined;
    try {
        write({ id, ok: true, result: await op(command, requestOptions) });
    } catch (error) {
        write({ id, ok: false, ...describeError(error) });
    }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
    if (line.trim()) void run(line); // not awaited: commands run concurrently
});
lines.on('close', async () => {
    try {
        if (options.terminateOnClose) await transport.terminateSession();
    } catch (error) {
        write({ transportError: `terminating the session: ${error.message}` });
    }
    closing = true; // the close below is ours, not news
    try {
        await client.close();
    } finally {
        // Exit once stdout has drained (keep-alive sockets would otherwise hold the process).
        process.stdout.write('', () => process.exit(0));
    }
});
