package acp

import (
	"context"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/command"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

// The config options' ids.
const (
	configMode  = "mode"
	configModel = "model"
)

// sess is one ACP session of a connection: our session's id and cwd, its
// Runner, and what the editor chose.
type sess struct {
	a      *agent
	info   Session
	runner *runner.Runner
	// claims counts the prompts (and commands) that hold this session;
	// guarded by a.mu, so a load never replaces a session a prompt holds.
	claims int

	mu           sync.Mutex
	exists       bool // the transcript exists (a first prompt creates it)
	set          Settings
	allowAlways  map[string]bool // tool names the person allowed for the session
	rejectAlways map[string]bool // and refused
	active       map[*promptRun]struct{}
	prompts      sync.WaitGroup
	commandsSent bool
	usage        llm.Usage // summed over this connection's runs
	tools        []string  // the last run's tools
}

func (s *sess) settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set
}

func (s *sess) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active) > 0
}

// cancel aborts every prompt of the session; their permission requests are
// withdrawn as they end.
func (s *sess) cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.active {
		p.abort(runner.ErrAborted)
	}
}

func (s *sess) wait() { s.prompts.Wait() }

var modeNames = []struct{ id, name, desc string }{
	{tool.ApprovalModeAsk, "Ask", "ask before each tool call that could change something"},
	{tool.ApprovalModeAuto, "Auto", "run every tool call without asking"},
	{tool.ApprovalModeNever, "Read-only", "refuse every tool call that could change something"},
}

func (s *sess) modes() *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(s.settings().Mode)}
	for _, m := range modeNames {
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	return st
}

func (s *sess) configOptions() []sdk.SessionConfigOption {
	set := s.settings()
	modes := sdk.SessionConfigSelectOptionsUngrouped{}
	for _, m := range modeNames {
		modes = append(modes, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	mode := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(set.Mode), sdk.SessionConfigSelectOptions{Ungrouped: &modes})
	mode.Select.Id, mode.Select.Name = configMode, "Approval"
	mode.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryMode)
	opts := []sdk.SessionConfigOption{mode}
	if models := s.a.cfg.Models; len(models) > 0 {
		list := sdk.SessionConfigSelectOptionsUngrouped{}
		for _, m := range models {
			list = append(list, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: m})
		}
		model := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(set.Model), sdk.SessionConfigSelectOptions{Ungrouped: &list})
		model.Select.Id, model.Select.Name = configModel, "Model"
		model.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryModel)
		opts = append(opts, model)
	}
	return opts
}

// setMode switches the approval mode of the session's next tool calls
// (the run in progress keeps the one it started with).
func (s *sess) setMode(mode string) error {
	if _, err := tool.ApprovalPolicyFor(mode); err != nil || mode == "" {
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no mode %q: use ask, auto or never", mode)})
	}
	s.mu.Lock()
	s.set.Mode = mode
	s.mu.Unlock()
	return nil
}

// setModel switches the model of the session's next runs, to one of
// Config.Models when there are some.
func (s *sess) setModel(model string) error {
	if models := s.a.cfg.Models; len(models) > 0 && !slices.Contains(models, model) {
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no model %q here: offered are %v", model, models)})
	}
	s.mu.Lock()
	s.set.Model = model
	s.mu.Unlock()
	return nil
}

// spec says which session a run uses: the named new one until its
// transcript exists.
func (s *sess) spec(ctx context.Context) runner.SessionSpec {
	s.mu.Lock()
	exists := s.exists
	s.mu.Unlock()
	if !exists {
		if _, err := s.a.cfg.Store.Load(ctx, s.info.ID); err == nil {
			exists = true
		}
	}
	if exists {
		return runner.SessionSpec{ID: s.info.ID, Cwd: s.info.Cwd}
	}
	return runner.SessionSpec{ID: s.info.ID, New: true, Cwd: s.info.Cwd}
}

// sender sends the session's updates; errors (the editor went away) are
// dropped: the run is aborted by the connection's end.
func (s *sess) sender(ctx context.Context) func(sdk.SessionUpdate) {
	id := sdk.SessionId(s.info.ID)
	return func(u sdk.SessionUpdate) {
		_ = s.a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: u})
	}
}

// commands are the slash commands of the ACP face, from package command.
func (s *sess) commands() []sdk.AvailableCommand {
	var out []sdk.AvailableCommand
	for _, c := range command.All(command.ACP) {
		if c.Name == command.Compact && s.a.cfg.Compact == nil {
			continue
		}
		ac := sdk.AvailableCommand{Name: c.Name, Description: c.Summary}
		if c.Args != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.Args}}
		}
		out = append(out, ac)
	}
	return out
}

// sendCommands sends available_commands_update once per session.
func (s *sess) sendCommands(send func(sdk.SessionUpdate)) {
	s.mu.Lock()
	sent := s.commandsSent
	s.commandsSent = true
	s.mu.Unlock()
	if sent {
		return
	}
	send(sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: s.commands()}})
}
