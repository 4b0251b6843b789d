package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

// rpcMethod is one JSON-RPC method: the scope it needs and its handler.
type rpcMethod struct {
	scope Scope
	fn    func(ctx context.Context, c *rpcConn, params json.RawMessage) (any, *Error)
}

// rpcMethods is the method table of /v1/ws and --stdio (docs/gateway.md):
// each calls the *Server method its REST path calls.
var rpcMethods map[string]rpcMethod

func init() {
	rpcMethods = map[string]rpcMethod{
		"initialize": {0, rpcInitialize},

		"session/create": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p CreateSessionRequest) (any, *Error) {
			return c.s.CreateSession(ctx, p)
		})},
		"session/list": {ScopeRead, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			Cwd    string `json:"cwd"`
			Limit  int    `json:"limit"`
			Cursor string `json:"cursor"`
		}) (any, *Error) {
			return c.s.ListSessions(ctx, p.Cwd, p.Limit, p.Cursor)
		})},
		"session/get": {ScopeRead, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			SessionID string  `json:"sessionId"`
			Limit     *int    `json:"limit"`
			Cursor    *string `json:"cursor"`
		}) (any, *Error) {
			if p.Limit == nil && p.Cursor == nil { // the Session alone, as GET without ?limit= or ?cursor=
				return c.s.GetSession(ctx, p.SessionID)
			}
			return c.s.GetSessionPage(ctx, p.SessionID, deref(p.Cursor), deref(p.Limit))
		})},
		"session/messages": {ScopeRead, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			SessionID string `json:"sessionId"`
			After     string `json:"after"`
			Limit     int    `json:"limit"`
		}) (any, *Error) {
			return c.s.Messages(ctx, p.SessionID, p.After, p.Limit)
		})},
		"session/fork": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			SessionID string `json:"sessionId"`
			LeafID    string `json:"leafId"`
		}) (any, *Error) {
			return c.s.ForkSession(ctx, p.SessionID, p.LeafID)
		})},
		"session/delete": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p sessionParams) (any, *Error) {
			if e := c.s.DeleteSession(ctx, p.SessionID); e != nil {
				return nil, e
			}
			return map[string]any{"deleted": true}, nil
		})},
		"session/command": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			SessionID string `json:"sessionId"`
			CommandRequest
		}) (any, *Error) {
			return c.s.Command(ctx, p.SessionID, p.CommandRequest)
		})},

		"run/start": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			SessionID string `json:"sessionId"`
			StartRunRequest
		}) (any, *Error) {
			return c.s.StartRun(ctx, p.SessionID, p.StartRunRequest)
		})},
		"run/get": {ScopeRead, rpcCall(func(ctx context.Context, c *rpcConn, p runParams) (any, *Error) {
			return c.s.GetRun(ctx, p.RunID)
		})},
		"run/pending": {ScopeRead, rpcCall(func(ctx context.Context, c *rpcConn, p runParams) (any, *Error) {
			list, e := c.s.Pending(ctx, p.RunID)
			return map[string]any{"pending": list}, e
		})},
		"run/steer": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p injectParams) (any, *Error) {
			return c.s.Steer(ctx, p.RunID, p.Text, false)
		})},
		"run/followUp": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p injectParams) (any, *Error) {
			return c.s.Steer(ctx, p.RunID, p.Text, true)
		})},
		"run/abort": {ScopeWrite, rpcCall(func(ctx context.Context, c *rpcConn, p runParams) (any, *Error) {
			if e := c.s.AbortRun(ctx, p.RunID); e != nil {
				return nil, e
			}
			return map[string]any{"aborting": true}, nil
		})},

		"events/subscribe":   {ScopeRead, rpcCall(rpcSubscribe)},
		"events/unsubscribe": {ScopeRead, rpcCall(rpcUnsubscribe)},

		"approval/respond": {ScopeApprove, rpcCall(func(ctx context.Context, c *rpcConn, p struct {
			ApprovalID string `json:"approvalId"`
			ApprovalAnswer
		}) (any, *Error) {
			if e := c.s.Respond(ctx, p.ApprovalID, p.ApprovalAnswer); e != nil {
				return nil, e
			}
			return map[string]any{"resolved": true}, nil
		})},
	}
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}

type runParams struct {
	RunID string `json:"runId"`
}

type injectParams struct {
	RunID string `json:"runId"`
	Text  string `json:"text"`
}

// rpcCall decodes params strictly into P (as REST decodes a body) and
// calls f.
func rpcCall[P any](f func(ctx context.Context, c *rpcConn, p P) (any, *Error)) func(context.Context, *rpcConn, json.RawMessage) (any, *Error) {
	return func(ctx context.Context, c *rpcConn, raw json.RawMessage) (any, *Error) {
		var p P
		if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				return nil, errorf(CodeInvalidRequest, "params: %v", err)
			}
		}
		return f(ctx, c, p)
	}
}

// initializeParams is what a client says of itself.
type initializeParams struct {
	Client       map[string]any `json:"client"`
	Capabilities struct {
		PerTaskStop bool     `json:"perTaskStop"`
		OptOut      []string `json:"optOut"`
	} `json:"capabilities"`
}

func rpcInitialize(ctx context.Context, c *rpcConn, raw json.RawMessage) (any, *Error) {
	var p initializeParams
	if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, errorf(CodeInvalidRequest, "params: %v", err)
		}
	}
	c.mu.Lock()
	c.client = p.Client
	for _, t := range p.Capabilities.OptOut {
		c.optOut[t] = true
	}
	c.mu.Unlock()
	q := c.s.cfg.ClientQueue
	return map[string]any{
		"protocolVersion": runner.ProtocolVersion,
		"server":          map[string]any{"name": "agentloop"},
		"scopes":          c.scopes.String(),
		"policy": map[string]any{
			"heartbeatMs":      c.s.cfg.Heartbeat.Milliseconds(),
			"maxQueuedFrames":  q.Frames,
			"maxQueuedBytes":   q.Bytes,
			"maxRequestBytes":  c.s.cfg.MaxBody,
			"maxSubscriptions": maxRPCSubscriptions,
		},
	}, nil
}

// subscribeParams names a session or a run; afterSeq absent means live
// events only for a session, the run's first event for a run.
type subscribeParams struct {
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
	AfterSeq  *int64 `json:"afterSeq"`
}

// subscribeResult is SubscribeResult with the subscription's id, for
// events/unsubscribe.
type subscribeResult struct {
	Subscription string `json:"subscription"`
	SubscribeResult
}

func rpcSubscribe(ctx context.Context, c *rpcConn, p subscribeParams) (any, *Error) {
	if (p.SessionID == "") == (p.RunID == "") {
		return nil, errorf(CodeInvalidRequest, "events/subscribe takes one of sessionId and runId")
	}
	sessionID, after := p.SessionID, int64(-1)
	if p.RunID != "" {
		rs, e := c.s.runByID(p.RunID)
		if e != nil {
			return nil, e
		}
		sessionID, after = rs.sess.id, rs.afterSeq
	}
	if p.AfterSeq != nil {
		if *p.AfterSeq < 0 {
			return nil, errorf(CodeInvalidRequest, "afterSeq %d is not a seq", *p.AfterSeq)
		}
		after = *p.AfterSeq
	}
	c.mu.Lock()
	if len(c.subs) >= maxRPCSubscriptions {
		c.mu.Unlock()
		return nil, errorf(CodeInvalidRequest, "a connection has at most %d subscriptions", maxRPCSubscriptions)
	}
	c.nsub++
	id := "sub_" + strconv.Itoa(c.nsub)
	c.mu.Unlock()
	sub, res, e := c.s.subscribe(sessionID, p.RunID, after)
	if e != nil {
		return nil, e
	}
	rsub := &rpcSub{id: id, sub: sub, runID: p.RunID}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		sub.Close()
		return nil, errorf(CodeUnavailable, "the connection is closing")
	}
	c.subs[id] = rsub
	c.mu.Unlock()
	// The pump starts once the answer is out: the replay comes after it.
	// It is counted now, so serve cannot miss it.
	c.pwg.Add(1)
	return rpcThen{result: subscribeResult{Subscription: id, SubscribeResult: res}, then: func() {
		go func() {
			defer c.pwg.Done()
			c.pump(rsub)
		}()
	}}, nil
}

func rpcUnsubscribe(ctx context.Context, c *rpcConn, p struct {
	Subscription string `json:"subscription"`
	SessionID    string `json:"sessionId"`
	RunID        string `json:"runId"`
}) (any, *Error) {
	c.mu.Lock()
	var drop []*rpcSub
	for id, rs := range c.subs {
		if id == p.Subscription || p.Subscription == "" && (p.RunID != "" && rs.runID == p.RunID ||
			p.SessionID != "" && rs.runID == "" && rs.sub.ss.id == p.SessionID) {
			drop = append(drop, rs)
			delete(c.subs, id)
		}
	}
	c.mu.Unlock()
	for _, rs := range drop {
		rs.sub.Close()
	}
	return map[string]any{"unsubscribed": len(drop)}, nil
}

// pump sends a subscription's frames as event notifications until it ends.
// A client that stops reading blocks the pump in a write; the
// subscription's queue then fills and cuts it, and the watcher below ends
// the connection with 1008 "slow consumer".
func (c *rpcConn) pump(rs *rpcSub) {
	sub := rs.sub
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-sub.closed:
			sub.mu.Lock()
			err := sub.err
			sub.mu.Unlock()
			if err == ErrSlowConsumer {
				c.end(errSlowConsumer)
			}
		case <-c.ctx.Done():
		}
	}()
	defer func() {
		c.mu.Lock()
		delete(c.subs, rs.id)
		c.mu.Unlock()
		sub.Close()
		<-watchDone
	}()
	approver := c.scopes&ScopeApprove != 0
	for {
		frames, err := sub.next(c.ctx, nil)
		if err != nil {
			return
		}
		for _, f := range frames {
			c.mu.Lock()
			skip := c.optOut[f.typ]
			c.mu.Unlock()
			if !skip {
				c.notify("event", f.data)
			}
			switch {
			case f.typ == EventApprovalRequested && approver:
				c.askApproval(f)
			case f.typ == EventApprovalResolved:
				c.approvalResolved(f)
			case rs.runID != "" && f.typ == string(runner.EventRunEnd) && f.runID == rs.runID && !f.noID:
				return // a run's stream ends with its run_end, as over SSE
			}
			if c.ctx.Err() != nil {
				return
			}
		}
	}
}

// closeSubs ends every subscription of the connection.
func (c *rpcConn) closeSubs() {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]*rpcSub{}
	c.mu.Unlock()
	for _, rs := range subs {
		rs.sub.Close()
	}
}

// approvalFields are the fields of approval_requested and approval_resolved.
type approvalFields struct {
	SessionID  string          `json:"sessionId"`
	RunID      string          `json:"runId"`
	ApprovalID string          `json:"approvalId"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args,omitempty"`
	Options    []string        `json:"options,omitempty"`
	Text       string          `json:"text,omitempty"`
	Decision   string          `json:"decision,omitempty"`
	By         string          `json:"by,omitempty"`
}

// askApproval sends approval/request for a pending action to a client
// that may answer it, once per connection (a resubscribe re-sends the
// event, not the request).
func (c *rpcConn) askApproval(f frame) {
	var a approvalFields
	if json.Unmarshal(f.data, &a) != nil || a.ApprovalID == "" {
		return
	}
	// The id is recorded before the request goes out, so an answer that
	// comes back at once finds it.
	c.mu.Lock()
	if _, dup := c.asked[a.ApprovalID]; dup {
		c.mu.Unlock()
		return
	}
	c.nextID++
	id := c.nextID
	c.asked[a.ApprovalID] = id
	c.askedR[id] = a.ApprovalID
	c.mu.Unlock()
	c.request(id, "approval/request", approvalFields{SessionID: a.SessionID, RunID: a.RunID, ApprovalID: a.ApprovalID,
		ToolCallID: a.ToolCallID, ToolName: a.ToolName, Args: a.Args, Options: a.Options, Text: a.Text})
}

// approvalResolved tells a client we asked that the action was resolved
// (by it, by another client, or by the server), and forgets the request.
func (c *rpcConn) approvalResolved(f frame) {
	var a approvalFields
	if json.Unmarshal(f.data, &a) != nil {
		return
	}
	c.mu.Lock()
	id, ok := c.asked[a.ApprovalID]
	delete(c.asked, a.ApprovalID)
	delete(c.askedR, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	b, err := llm.MarshalJSON(map[string]any{"approvalId": a.ApprovalID, "sessionId": a.SessionID, "runId": a.RunID,
		"decision": a.Decision, "by": a.By})
	if err == nil {
		c.notify("approval/resolved", b)
	}
}

// approvalReply is a client's answer to approval/request.
type approvalReply struct {
	Decision string `json:"decision"`
	Message  string `json:"message,omitempty"`
}

// onResponse takes a client's answer to one of our requests: an
// approval/request's {decision, message?}. An error answer, or one that
// comes after another answer won, changes nothing.
func (c *rpcConn) onResponse(m rpcMessage) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	approvalID, ok := c.askedR[id]
	c.mu.Unlock()
	if !ok || m.Error != nil || len(m.Result) == 0 {
		return
	}
	var ans approvalReply
	if json.Unmarshal(m.Result, &ans) != nil {
		return
	}
	_ = c.s.Respond(c.ctx, approvalID, ApprovalAnswer{Decision: ans.Decision, Message: ans.Message})
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}
