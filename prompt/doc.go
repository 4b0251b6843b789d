// Package prompt builds the system prompt of a run: a default that says what
// the agent is, which tools it has, where it works and what day it is;
// then the project instructions users keep in AGENTS.md (or CLAUDE.md)
// files; then whatever the caller appends.
//
// It imports only llm from agentloop and reads nothing but the instruction
// files.
package prompt
