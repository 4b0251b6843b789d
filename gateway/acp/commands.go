package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/command"
	"github.com/agentloop/agentloop/llm"
)

// command runs a slash command of the ACP face (package command's table)
// instead of a run: its reply is an agent message, and the prompt ends
// end_turn. It never reaches the model.
func (s *sess) command(ctx context.Context, send func(sdk.SessionUpdate), name, args string, parseErr error) (sdk.PromptResponse, error) {
	reply, err := s.runCommand(ctx, name, args, parseErr)
	if err != nil {
		reply = err.Error()
	}
	send(sdk.UpdateAgentMessageText(reply))
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

func (s *sess) runCommand(ctx context.Context, name, args string, parseErr error) (string, error) {
	if parseErr != nil {
		return "", parseErr
	}
	if spec, _ := command.Lookup(name); !spec.Offered(command.ACP) || name == command.Compact && s.a.cfg.Compact == nil {
		return "", fmt.Errorf("/%s is not available in an editor; the commands here are %s", name, s.commandNames())
	}
	switch name {
	case command.Model:
		if args == "" {
			m := s.settings().Model
			if m == "" {
				m = "the default model"
			}
			return "The model is " + m + ".", nil
		}
		if err := s.setModel(args); err != nil {
			return "", fmt.Errorf("/model %s: %s", args, errorText(err))
		}
		return "The next runs use " + args + ".", nil
	case command.Thinking:
		level, ok := llm.ParseThinkingLevel(args)
		if !ok {
			return "", fmt.Errorf("/thinking %q: use one of off, minimal, low, medium, high, xhigh", args)
		}
		s.mu.Lock()
		s.set.Thinking = level
		s.mu.Unlock()
		return "Thinking is " + string(level) + " for the next runs.", nil
	case command.Compact:
		if s.running() {
			return "", fmt.Errorf("/compact: the session is running a prompt; cancel it first")
		}
		return s.a.cfg.Compact(ctx, s.info, s.settings(), args)
	case "cost":
		s.mu.Lock()
		u := s.usage
		s.mu.Unlock()
		return fmt.Sprintf("This session used %d input and %d output tokens here (%d read from cache), $%.4f.",
			u.Input, u.Output, u.CacheRead, u.Cost.Total), nil
	case "tools":
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		if len(tools) == 0 {
			return "No run has started in this session yet: the tools are listed after the first prompt.", nil
		}
		return "The model is offered: " + strings.Join(tools, ", ") + ".", nil
	}
	return "", fmt.Errorf("/%s is not available in an editor", name)
}

func (s *sess) commandNames() string {
	var names []string
	for _, c := range s.commands() {
		names = append(names, "/"+c.Name)
	}
	return strings.Join(names, ", ")
}

// errorText is an error's message without the JSON-RPC wrapping.
func errorText(err error) string {
	if re, ok := err.(*sdk.RequestError); ok {
		if m, ok := re.Data.(map[string]any); ok {
			if e, ok := m["error"].(string); ok {
				return e
			}
		}
		return re.Message
	}
	return err.Error()
}
