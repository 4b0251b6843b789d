#!/bin/bash
# A PreToolUse guard as Claude Code users write it: read the event from
# stdin, look at the Bash command, refuse recursive deletes with exit 2.
cmd=$(jq -r '.tool_input.command')
if printf '%s' "$cmd" | grep -Eq '(^|[;&| ])rm +-[a-zA-Z]*r[a-zA-Z]*f|(^|[;&| ])rm +-[a-zA-Z]*f[a-zA-Z]*r'; then
  echo "Blocked by project policy: rm -rf is not allowed here. Delete the specific files you mean instead." >&2
  exit 2
fi
exit 0
