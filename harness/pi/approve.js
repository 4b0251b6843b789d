// agentloop's approval gate for pi's rpc mode: every tool call is put to
// the client (agentloop) as an extension UI input request before it runs;
// the answer "allow" lets it run, anything else blocks it with that text
// as the reason the model reads.
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    const question = JSON.stringify({ toolCallId: event.toolCallId, toolName: event.toolName, input: event.input });
    const answer = await ctx.ui.input("agentloop:approve", question);
    if (answer !== "allow") {
      return { block: true, reason: answer || "Denied by agentloop's approval policy." };
    }
  });
}
