#!/usr/bin/env node
// mcp-echo-server.mjs: a minimal MCP server on stdio, written with the
// official TypeScript SDK, used to check how an MCP client (the inspector CLI)
// passes tool arguments. It serves one tool, `echo_args`, whose input schema
// mirrors podbot's shell_execute: `command` is an array of strings, `cwd` a
// string, `timeout_seconds` a number, `env` an object. The tool returns the
// arguments it received, as JSON text and as structuredContent, so a caller
// can see exactly what arrived and with which JSON types. A call whose
// command starts with "fail" returns the same report as a tool error
// (isError: true).
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const server = new Server(
  { name: "podbot-e2e-echo", version: "0.0.0" },
  { capabilities: { tools: {} } },
);

const echoTool = {
  name: "echo_args",
  description: "Returns the arguments it was called with.",
  inputSchema: {
    type: "object",
    properties: {
      command: { type: "array", items: { type: "string" }, minItems: 1 },
      cwd: { type: "string" },
      timeout_seconds: { type: "number" },
      env: { type: "object", additionalProperties: { type: "string" } },
    },
    required: ["command"],
  },
};

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [echoTool],
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (name !== echoTool.name) {
    return {
      isError: true,
      content: [{ type: "text", text: `unknown tool ${JSON.stringify(name)}` }],
    };
  }
  const types = Object.fromEntries(
    Object.entries(args).map(([k, v]) => [k, Array.isArray(v) ? "array" : v === null ? "null" : typeof v]),
  );
  const received = { arguments: args, types };
  if (Array.isArray(args.command) && args.command[0] === "fail") {
    // Lets a caller see how a client reports a tool-level error.
    return { isError: true, content: [{ type: "text", text: JSON.stringify(received) }] };
  }
  return {
    content: [{ type: "text", text: JSON.stringify(received) }],
    structuredContent: received,
  };
});

await server.connect(new StdioServerTransport());
