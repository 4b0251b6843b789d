package loopguard_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/agentloop/agentloop/internal/vectortest"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// The cases of shared/reference/vectors/tool_loop_detection.json are
// OpenClaw's own tests as data (read from shared/ beside the checkout, or
// from AGENTLOOP_VECTORS). They run through the
// small adapter below. Where we deliberately differ, the adapter says so
// by case name:
//
//   - oldCounting: OpenClaw counts only the earlier identical calls in the
//     history; we count the call being checked too (so "the 10th identical
//     call warns" is literally true). For the same history our Count is
//     theirs + 1 and the level and detector are the same; the adapter
//     checks exactly that. ping_pong counts include the current call in
//     both and must be equal. Cases of the other half of the suite are
//     translated by the same rule (any detector but ping_pong).
//   - skipLoopCases: cases encoding behaviour we changed on purpose are
//     skipped with the reason. A generic repeat that OpenClaw only warns
//     about at or beyond our critical threshold is blocked here, so such
//     cases are skipped by that rule too.
//   - messages are our own words: the adapter checks the phrases the
//     original test asserts (messageContains), the level prefix and the
//     count, not the text.
var oldCounting = map[string]bool{
	"warns for known polling no-progress loops":                    true,
	"blocks known polling no-progress loops at critical threshold": true,
	"blocks any tool with global no-progress breaker at 30":        true,
}

var skipLoopCases = map[string]string{}

const genericBlockedHere = "generic repeats are blocked at the critical threshold here; OpenClaw only warns"

type loopCase struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
}

type loopOp struct {
	Op         string          `json:"op"`
	Tool       string          `json:"tool"`
	Params     json.RawMessage `json:"params"`
	ToolCallID string          `json:"toolCallId"`
	Result     *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Details json.RawMessage `json:"details"`
	} `json:"result"`
	Error  json.RawMessage `json:"error"`
	Config *loopConfig     `json:"config"`
}

// loopConfig is OpenClaw's loop-detection config as a detect op gives it.
type loopConfig struct {
	Enabled                       *bool   `json:"enabled"`
	HistorySize                   float64 `json:"historySize"`
	WarningThreshold              float64 `json:"warningThreshold"`
	CriticalThreshold             float64 `json:"criticalThreshold"`
	GlobalCircuitBreakerThreshold float64 `json:"globalCircuitBreakerThreshold"`
	Detectors                     struct {
		GenericRepeat       *bool `json:"genericRepeat"`
		KnownPollNoProgress *bool `json:"knownPollNoProgress"`
		PingPong            *bool `json:"pingPong"`
	} `json:"detectors"`
}

// whole keeps positive integers only; anything else means the default, as
// in OpenClaw.
func whole(f float64) int {
	if f <= 0 || f != float64(int(f)) {
		return 0
	}
	return int(f)
}

func (c *loopConfig) config() *loopguard.Config {
	if c == nil {
		return nil
	}
	off := func(b *bool) bool { return b != nil && !*b }
	return &loopguard.Config{
		Disabled:             off(c.Enabled),
		HistorySize:          whole(c.HistorySize),
		Warning:              whole(c.WarningThreshold),
		Critical:             whole(c.CriticalThreshold),
		Global:               whole(c.GlobalCircuitBreakerThreshold),
		DisableGenericRepeat: off(c.Detectors.GenericRepeat),
		DisableKnownPoll:     off(c.Detectors.KnownPollNoProgress),
		DisablePingPong:      off(c.Detectors.PingPong),
	}
}

// thresholds returns the warning, critical and global thresholds cfg
// amounts to, normalised as Config documents.
func thresholds(cfg *loopguard.Config) (w, c, g int) {
	w, c, g = loopguard.DefaultWarning, loopguard.DefaultCritical, loopguard.DefaultGlobal
	if cfg != nil {
		w, c, g = cmp.Or(cfg.Warning, w), cmp.Or(cfg.Critical, c), cmp.Or(cfg.Global, g)
	}
	if c <= w {
		c = w + 1
	}
	if g <= c {
		g = c + 1
	}
	return w, c, g
}

type loopExpected struct {
	Hash       string `json:"hash"`
	StableJSON string `json:"stableJson"`
	Length     *int   `json:"length"`
	// ResultHashLength is the length of the outcome hash of the latest
	// record that has one.
	ResultHashLength *int `json:"resultHashLength"`
	NotEqualsHashOf  *struct {
		ToolName string          `json:"toolName"`
		Params   json.RawMessage `json:"params"`
	} `json:"notEqualsHashOf"`
	HistoryLength  *int   `json:"historyLength"`
	OldestArgsHash string `json:"oldestArgsHash"`
	History        []struct {
		ToolName   string `json:"toolName"`
		ToolCallID string `json:"toolCallId"`
		ArgsHash   string `json:"argsHash"`
	} `json:"history"`
	Detections []struct {
		Stuck          bool   `json:"stuck"`
		Level          string `json:"level"`
		Detector       string `json:"detector"`
		Count          int    `json:"count"`
		PairedToolName string `json:"pairedToolName"`
		Message        string `json:"message"`
	} `json:"detections"`
	MessageContains []string `json:"messageContains"`
	TotalCalls      int      `json:"totalCalls"`
	UniquePatterns  int      `json:"uniquePatterns"`
	MostFrequent    *struct {
		ToolName string `json:"toolName"`
		Count    int    `json:"count"`
	} `json:"mostFrequent"`
}

func TestVectors(t *testing.T) {
	data := vectortest.Read(t, "tool_loop_detection.json")
	var cases []loopCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("no vector cases")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skipLoopCases[c.Name]; ok {
				t.Skip(why)
			}
			// Strict: a field this adapter does not check fails the case
			// rather than pass it unchecked.
			var exp loopExpected
			dec := json.NewDecoder(bytes.NewReader(c.Expected))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&exp); err != nil {
				t.Fatalf("no adapter for a field of expected: %v", err)
			}
			switch c.Function {
			case "hashToolCall":
				var in struct {
					ToolName string          `json:"toolName"`
					Params   json.RawMessage `json:"params"`
				}
				mustUnmarshal(t, c.Input, &in)
				checkHash(t, in.ToolName, in.Params, exp)
			case "toolLoopDetection.sequence", "toolLoopDetection.stats":
				runSequence(t, c.Name, c.Input, exp)
			default:
				t.Fatalf("no adapter for function %q", c.Function)
			}
		})
	}
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func checkHash(t *testing.T, name string, params json.RawMessage, exp loopExpected) {
	t.Helper()
	got := loopguard.HashCall(name, params)
	if got != exp.Hash {
		t.Errorf("HashCall = %s, want %s", got, exp.Hash)
	}
	stable, err := loopguard.CanonicalJSON(params)
	if err != nil {
		t.Fatal(err)
	}
	if exp.StableJSON != "" && string(stable) != exp.StableJSON {
		t.Errorf("CanonicalJSON = %.80s, want %.80s", stable, exp.StableJSON)
	}
	if exp.Length != nil && len(got) != *exp.Length {
		t.Errorf("len(hash) = %d, want %d", len(got), *exp.Length)
	}
	if o := exp.NotEqualsHashOf; o != nil && loopguard.HashCall(o.ToolName, o.Params) == got {
		t.Errorf("hash equals that of %s %s", o.ToolName, o.Params)
	}
}

func runSequence(t *testing.T, name string, input json.RawMessage, exp loopExpected) {
	t.Helper()
	var in struct {
		Ops []loopOp `json:"ops"`
	}
	mustUnmarshal(t, input, &in)
	apply := func(h *loopguard.History, op loopOp) {
		switch op.Op {
		case "record":
			h.Record(op.ToolCallID, op.Tool, op.Params, false)
		case "outcome":
			res := tool.Result{}
			if op.Result != nil {
				for _, b := range op.Result.Content {
					res.Content = append(res.Content, llm.Text(b.Text))
				}
				res.Details = op.Result.Details
			} else {
				res = tool.ErrorResult(string(op.Error))
			}
			h.RecordOutcome(op.ToolCallID, op.Tool, op.Params, loopguard.OutcomeHash(op.Tool, op.Params, res))
		default:
			t.Fatalf("unknown op %q", op.Op)
		}
	}
	h := loopguard.NewHistory(nil)
	var dets []loopguard.Detection
	var cfgs []*loopguard.Config
	var done []loopOp
	for _, op := range in.Ops {
		if op.Op != "detect" {
			apply(h, op)
			done = append(done, op)
			continue
		}
		// The detect op carries its own config: replay the calls so far
		// into a history made with it.
		cfg := op.Config.config()
		dh := loopguard.NewHistory(cfg)
		for _, p := range done {
			apply(dh, p)
		}
		dets = append(dets, dh.Detect(op.Tool, op.Params))
		cfgs = append(cfgs, cfg)
	}
	recs := h.Records()
	if exp.ResultHashLength != nil {
		n := -1
		for _, r := range slices.Backward(recs) {
			if r.Outcome != "" {
				n = len(r.Outcome)
				break
			}
		}
		if n != *exp.ResultHashLength {
			t.Errorf("the latest outcome hash has %d characters, want %d", n, *exp.ResultHashLength)
		}
	}
	if exp.HistoryLength != nil && len(recs) != *exp.HistoryLength {
		t.Errorf("history length = %d, want %d", len(recs), *exp.HistoryLength)
	}
	if exp.OldestArgsHash != "" && (len(recs) == 0 || recs[0].ArgsHash != exp.OldestArgsHash) {
		t.Errorf("oldest record = %+v, want args hash %s", recs[0], exp.OldestArgsHash)
	}
	for i, w := range exp.History {
		if i >= len(recs) {
			t.Fatalf("history has %d records, want at least %d", len(recs), i+1)
		}
		r := recs[i]
		if r.Tool != w.ToolName || r.CallID != w.ToolCallID || r.ArgsHash != w.ArgsHash {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
	}
	if exp.MostFrequent != nil {
		s := h.Stats()
		if s.TotalCalls != exp.TotalCalls || s.UniquePatterns != exp.UniquePatterns ||
			s.MostFrequentTool != exp.MostFrequent.ToolName || s.MostFrequentCount != exp.MostFrequent.Count {
			t.Errorf("stats = %+v, want total %d unique %d most %+v", s, exp.TotalCalls, exp.UniquePatterns, *exp.MostFrequent)
		}
	}
	if len(dets) != len(exp.Detections) {
		t.Fatalf("%d detect ops, %d expected detections", len(dets), len(exp.Detections))
	}
	for i, w := range exp.Detections {
		d := dets[i]
		if mismatch := d.Stuck != w.Stuck || string(d.Level) != w.Level; mismatch && d.Stuck {
			// One call earlier than OpenClaw, at exactly our threshold: the
			// counting convention, not a different judgement.
			warn, crit, global := thresholds(cfgs[i])
			at := map[loopguard.Level]int{loopguard.LevelWarning: warn, loopguard.LevelCritical: crit}[d.Level]
			if d.Detector == loopguard.DetectorGlobal {
				at = global
			}
			if d.Count == at {
				t.Skipf("OpenClaw fires one call later: we count the call being checked (our count %d is the threshold)", d.Count)
			}
		}
		if d.Stuck != w.Stuck {
			t.Fatalf("detection %d: stuck = %v (%+v), want %v", i, d.Stuck, d, w.Stuck)
		}
		if !w.Stuck {
			continue
		}
		if _, crit, _ := thresholds(cfgs[i]); w.Detector == "generic_repeat" && w.Level == "warning" && w.Count+1 >= crit {
			t.Skip(genericBlockedHere)
		}
		if string(d.Level) != w.Level || string(d.Detector) != w.Detector {
			t.Errorf("detection %d = %s/%s, want %s/%s", i, d.Level, d.Detector, w.Level, w.Detector)
		}
		wantCount := w.Count
		if w.Detector != "ping_pong" {
			if !oldCounting[name] {
				t.Logf("case %q is not listed in oldCounting; translating its count by the rule", name)
			}
			wantCount++ // we count the call being checked; OpenClaw does not
		}
		if d.Count != wantCount {
			t.Errorf("detection %d count = %d, want %d (OpenClaw's %d)", i, d.Count, wantCount, w.Count)
		}
		if w.PairedToolName != "" && d.PairedTool != w.PairedToolName {
			t.Errorf("paired tool = %q, want %q", d.PairedTool, w.PairedToolName)
		}
		for _, phrase := range exp.MessageContains {
			if !strings.Contains(d.Message, phrase) {
				t.Errorf("message %q lacks %q", d.Message, phrase)
			}
		}
		if !strings.Contains(d.Message, fmt.Sprint(d.Count)) {
			t.Errorf("message %q does not give the count %d", d.Message, d.Count)
		}
		if !strings.HasPrefix(d.Message, strings.ToUpper(w.Level)+":") {
			t.Errorf("message %q does not start with %s:", d.Message, strings.ToUpper(w.Level))
		}
	}
}

// TestVectorAdapterRules checks the adapter's own rules on made-up cases in
// the vectors' shape, so cases from the other half of the suite are judged
// the same way.
func TestVectorAdapterRules(t *testing.T) {
	ops := func(n int, detect string) json.RawMessage {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprintf(`{"op":"record","tool":"read","params":{"p":1},"toolCallId":"c%d"}`, i),
				fmt.Sprintf(`{"op":"outcome","tool":"read","params":{"p":1},"toolCallId":"c%d","result":{"content":[{"type":"text","text":"r%d"}]}}`, i, i))
		}
		b = append(b, `{"op":"detect","tool":"read","params":{"p":1},"config":`+detect+`}`)
		return json.RawMessage(`{"ops":[` + strings.Join(b, ",") + `]}`)
	}
	tests := []struct {
		name     string
		input    json.RawMessage
		expected string
		skipped  bool
	}{
		{"boundary below OpenClaw's warning is skipped", ops(9, `{"enabled":true}`), `{"detections":[{"stuck":false}]}`, true},
		{"generic warn-only beyond critical is skipped", ops(25, `{"enabled":true}`),
			`{"detections":[{"stuck":true,"level":"warning","detector":"generic_repeat","count":25}]}`, true},
		{"generic warning is checked", ops(12, `{"enabled":true}`),
			`{"detections":[{"stuck":true,"level":"warning","detector":"generic_repeat","count":12}]}`, false},
		{"config thresholds apply", ops(4, `{"enabled":true,"warningThreshold":4,"criticalThreshold":8}`),
			`{"detections":[{"stuck":true,"level":"warning","detector":"generic_repeat","count":4}]}`, false},
		{"disabled config", ops(25, `{"enabled":false}`), `{"detections":[{"stuck":false}]}`, false},
	}
	for _, tt := range tests {
		var sub *testing.T
		t.Run(tt.name, func(t *testing.T) {
			sub = t
			var exp loopExpected
			mustUnmarshal(t, []byte(tt.expected), &exp)
			runSequence(t, tt.name, tt.input, exp)
		})
		if sub.Skipped() != tt.skipped {
			t.Errorf("%s: skipped = %v, want %v", tt.name, sub.Skipped(), tt.skipped)
		}
	}
}
