// agentloop's own tools in pi's rpc mode. TOOLS (name, description,
// parameters: JSON schema) is put before this text by agentloop. Each
// call is carried out by the client: an extension UI input request
// titled "agentloop:tool" whose answer is {"text", "isError"}. pi's
// tool_call event (agentloop's approval gate) comes before execute.
export default function (pi) {
  for (const t of TOOLS) {
    pi.registerTool({
      name: t.name,
      label: t.name,
      description: t.description,
      parameters: t.parameters,
      async execute(toolCallId, params, signal, onUpdate, ctx) {
        const answer = await ctx.ui.input("agentloop:tool", JSON.stringify({ toolCallId, toolName: t.name, input: params }));
        let r;
        try {
          r = JSON.parse(answer);
        } catch {
          r = { text: "agentloop did not run the call", isError: true };
        }
        if (!r || r.isError) {
          throw new Error((r && r.text) || "the call failed");
        }
        return { content: [{ type: "text", text: r.text }], details: {} };
      },
    });
  }
}
