package session

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func FuzzParse(f *testing.F) {
	pi, err := os.ReadFile("testdata/pi-v3.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pi)
	f.Add(pi[:len(pi)-17]) // torn
	f.Add([]byte(`{"type":"session","id":"x"}` + "\n" + `{"type":"message","message":{"role":"user","content":"hi"}}` + "\n"))
	f.Add([]byte(`{"type":"session","version":3,"id":"x"}` + "\n" + `{"type":"compaction","id":"a","parentId":"a","summary":"s","firstKeptEntryId":"a"}` + "\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse("fuzz.jsonl", data)
		if err != nil {
			return
		}
		for i := range tr.Entries {
			if tr.Entries[i].ID == "" || tr.Entries[i].Type == "" {
				t.Fatalf("entry %d loaded without id or type: %+v", i, tr.Entries[i])
			}
		}
		ctx := tr.Context("")
		if len(ctx.Messages) != len(ctx.EntryIDs) || len(ctx.Messages) > len(tr.Entries)+1 {
			t.Fatalf("context of %d messages, %d ids, from %d entries", len(ctx.Messages), len(ctx.EntryIDs), len(tr.Entries))
		}
		// What loads must survive a round trip through the file format.
		out, err := encodeTranscript(&tr.Header, tr.Entries)
		if err != nil {
			// Everything loaded came from valid JSON, so it encodes; if it
			// did not, appending to this session would fail.
			t.Fatalf("loaded transcript does not encode: %v", err)
		}
		again, err := Parse("again.jsonl", out)
		if err != nil {
			t.Fatalf("re-encoded transcript does not load: %v\n%s", err, out)
		}
		if len(again.Entries) != len(tr.Entries) || again.Leaf != tr.Leaf {
			t.Fatalf("round trip changed %d entries (leaf %s) into %d (leaf %s)", len(tr.Entries), tr.Leaf, len(again.Entries), again.Leaf)
		}
	})
}

func TestLoadPiFile(t *testing.T) {
	tr, err := LoadFile("testdata/pi-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 8 || len(tr.Warnings) != 0 {
		t.Fatalf("%d entries, warnings %v", len(tr.Entries), tr.Warnings)
	}
	c := tr.Context("")
	got := shape(c.Messages)
	want := []string{"u:read the README", "a:think|call:toolu_01/read", "r:toolu_01/read=# Project\n", "u:remember the tests"}
	if len(got) != len(want) {
		t.Fatalf("context %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %q, want %q", i, got[i], want[i])
		}
	}
	if c.ModelID != "claude-sonnet-4-5" || c.ThinkingLevel != "medium" {
		t.Errorf("model %s thinking %s", c.ModelID, c.ThinkingLevel)
	}
	// Fields we do not know survive in Extra (responseId here).
	if m := tr.Entries[3].Message; m.Extra["responseId"] == nil {
		t.Errorf("unknown message field lost: %+v", m.Extra)
	}
	if labels := tr.Labels(); labels["c3d4e5f6"] != "start" {
		t.Errorf("labels %v", labels)
	}
}

// The fast decode path must give what the preserving decoders give.
func TestFastDecodeMatchesSlow(t *testing.T) {
	pi, _ := os.ReadFile("testdata/pi-v3.jsonl")
	lines := bytes.Split(bytes.TrimSpace(pi), []byte("\n"))[1:]
	for k := range 8 {
		e := crashEntry(k)
		e.ID, e.ParentID, e.Timestamp = "id"+strconv.Itoa(k), "p", "2026-01-01T00:00:00.000Z"
		b, _ := json.Marshal(e)
		lines = append(lines, b)
	}
	lines = append(lines,
		[]byte(`{"type":"tool_result_truncation","id":"t","parentId":"p","timestamp":"","toolCallId":"c","content":"cut"}`),
		[]byte(`{"type":"message","id":"m","parentId":null,"timestamp":"","newField":1,"message":{"role":"user","content":[{"type":"text","text":"x","cache":true}],"timestamp":0}}`),
	)
	for _, line := range lines {
		fast, err := decodeEntry(line)
		if err != nil {
			t.Fatalf("fast decode %s: %v", line, err)
		}
		var slow Entry
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(asJSONAny(t, slow), asJSONAny(t, fast)); d != "" {
			t.Errorf("line %s decodes differently (-slow +fast):\n%s", line, d)
		}
	}
}
