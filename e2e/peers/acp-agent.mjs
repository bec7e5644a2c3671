#!/usr/bin/env node
// acp-agent.mjs: a small ACP agent on stdio, written with the official
// TypeScript SDK (@agentclientprotocol/sdk), that reports what a client in
// front of it let through.
//
// On `initialize` it records the client capabilities twice: exactly as they
// arrived on the wire (the raw `params.clientCapabilities` of the frame) and as
// the SDK parsed them (the SDK fills defaults such as fs.readTextFile=false,
// so only the raw view shows whether a field was removed). On `session/prompt`
// it asks the client for `fs/read_text_file` and `terminal/create`, records the
// JSON-RPC error (or the unexpected success) of each, sends one
// `agent_message_chunk` whose text is the JSON report
//
//   {capabilitiesSeen, capabilitiesParsed, initializeMeta, fsError,
//    terminalError, fsResult, terminalResult}
//
// and ends the turn with stopReason "end_turn".
//
// Environment:
//   ACP_AGENT_REQUEST_TIMEOUT_MS  how long to wait for each client answer
//                                 (default 10000); a timeout is reported as
//                                 {"timeout": true} instead of an error.
//
// Nothing but protocol frames is written to stdout; diagnostics go to stderr.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const requestTimeoutMs = Number(process.env.ACP_AGENT_REQUEST_TIMEOUT_MS || 10000);

// Frames larger than this are passed to the SDK but not inspected here.
const maxInspectedLineBytes = 1 << 20;

const state = {
  capabilitiesSeen: null,
  capabilitiesParsed: null,
  initializeMeta: null,
};

// inspectingStream watches the raw bytes on stdin and keeps the
// clientCapabilities of the last initialize request exactly as sent.
function inspectingStream(input) {
  let pending = Buffer.alloc(0);
  let skipping = false;
  const inspectLine = (line) => {
    let msg;
    try {
      msg = JSON.parse(line.toString("utf8"));
    } catch {
      return;
    }
    if (msg && msg.method === "initialize" && msg.params && typeof msg.params === "object") {
      state.capabilitiesSeen = msg.params.clientCapabilities ?? null;
      state.initializeMeta = msg.params._meta ?? null;
    }
  };
  return input.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        let buf = Buffer.from(chunk);
        let nl;
        while ((nl = buf.indexOf(0x0a)) !== -1) {
          if (!skipping) {
            inspectLine(Buffer.concat([pending, buf.subarray(0, nl)]));
          }
          pending = Buffer.alloc(0);
          skipping = false;
          buf = buf.subarray(nl + 1);
        }
        if (!skipping) {
          pending = Buffer.concat([pending, buf]);
          if (pending.length > maxInspectedLineBytes) {
            pending = Buffer.alloc(0);
            skipping = true;
          }
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

function describeError(err) {
  if (err instanceof acp.RequestError || (err && typeof err.code === "number")) {
    return { code: err.code, message: err.message, data: err.data ?? null };
  }
  return { message: String(err && err.message ? err.message : err) };
}

// attempt sends one request to the client and returns [error, result]; exactly
// one of them is non-null.
async function attempt(client, method, params) {
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve([{ timeout: true, afterMs: requestTimeoutMs }, null]), requestTimeoutMs);
  });
  const call = client.request(method, params).then(
    (result) => [null, result ?? {}],
    (err) => [describeError(err), null],
  );
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

let sessionCounter = 0;

const app = acp
  .agent({ name: "podbot-e2e-acp-agent" })
  .onRequest("initialize", ({ params }) => {
    state.capabilitiesParsed = params.clientCapabilities ?? null;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "podbot-e2e-acp-agent", version: "0.0.0" },
      authMethods: [],
    };
  })
  .onRequest("session/new", () => {
    sessionCounter += 1;
    return { sessionId: `e2e-session-${process.pid}-${sessionCounter}` };
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const sessionId = params.sessionId;
    const [fsError, fsResult] = await attempt(client, "fs/read_text_file", {
      sessionId,
      path: "/etc/hostname",
    });
    const [terminalError, terminalResult] = await attempt(client, "terminal/create", {
      sessionId,
      command: "echo",
      args: ["terminal-from-agent"],
    });
    const report = {
      capabilitiesSeen: state.capabilitiesSeen,
      capabilitiesParsed: state.capabilitiesParsed,
      initializeMeta: state.initializeMeta,
      fsError,
      terminalError,
      fsResult,
      terminalResult,
    };
    await client.notify("session/update", {
      sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: JSON.stringify(report) },
      },
    });
    return { stopReason: "end_turn" };
  })
  .onNotification("session/cancel", () => {});

const input = inspectingStream(Readable.toWeb(process.stdin));
const output = Writable.toWeb(process.stdout);
const connection = app.connect(acp.ndJsonStream(output, input));

connection.closed.then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`acp-agent: connection closed with error: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  },
);
