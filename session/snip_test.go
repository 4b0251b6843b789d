package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

func TestContextSnip(t *testing.T) {
	const note = "[note]"
	snip := func(from, to string) Entry {
		return SnipEntry(SnipData{FirstDroppedEntryID: from, FirstKeptEntryID: to, Note: note})
	}
	base := func() *Transcript {
		tr := &Transcript{}
		parent := ""
		for i, text := range []string{"u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"} {
			id := text
			m := user(text)
			if i%2 == 1 {
				m = asst(llm.Text(text))
			}
			e := MessageEntry(m)
			e.ID, e.ParentID, e.Timestamp = id, parent, "2026-01-01T00:00:00.000Z"
			tr.add(e)
			parent = id
		}
		return tr
	}
	tests := []struct {
		name    string
		extra   []Entry
		want    []string
		wantIDs []string
	}{
		{"snip leaves out the middle and puts the note before the kept message",
			[]Entry{snip("u2", "u4")},
			[]string{"u:u1", "a:a1", "u:" + note + "|u4", "a:a4"}, []string{"u1", "a1", "u4", "a4"}},
		{"a compaction before the hole keeps the snip",
			[]Entry{snip("u2", "u4"), CompactionEntry("s", "a1", 1)},
			[]string{"u:" + summaryPrefix + "s" + summarySuffix, "a:a1", "u:" + note + "|u4", "a:a4"}, []string{"c", "a1", "u4", "a4"}},
		{"a compaction past the hole took it in",
			[]Entry{snip("u2", "u4"), CompactionEntry("s", "u4", 1)},
			[]string{"u:" + summaryPrefix + "s" + summarySuffix, "u:u4", "a:a4"}, []string{"c", "u4", "a4"}},
		{"the latest snip wins",
			[]Entry{snip("u3", "u4"), snip("u2", "u4")},
			[]string{"u:u1", "a:a1", "u:" + note + "|u4", "a:a4"}, []string{"u1", "a1", "u4", "a4"}},
		{"a snip made on a snipped context joins the first",
			[]Entry{snip("u2", "u3"), SnipEntry(SnipData{FirstDroppedEntryID: "u3", FirstKeptEntryID: "u4", Note: "[second]"})},
			[]string{"u:u1", "a:a1", "u:[second]|u4", "a:a4"}, []string{"u1", "a1", "u4", "a4"}},
		{"an earlier snip stays when a later one names unknown entries",
			[]Entry{snip("u2", "u4"), snip("u1", "nope")},
			[]string{"u:u1", "a:a1", "u:" + note + "|u4", "a:a4"}, []string{"u1", "a1", "u4", "a4"}},
		{"unknown entries make it no snip",
			[]Entry{snip("u2", "nope")},
			[]string{"u:u1", "a:a1", "u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4"}, []string{"u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"}},
		{"a reversed range is ignored",
			[]Entry{snip("u4", "u2")},
			[]string{"u:u1", "a:a1", "u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4"}, []string{"u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"}},
		{"other custom entries change nothing",
			[]Entry{CustomEntry("mine", json.RawMessage(`{"firstDroppedEntryId":"u2","firstKeptEntryId":"u4"}`))},
			[]string{"u:u1", "a:a1", "u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4"}, []string{"u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := base()
			// The snip and compaction entries sit after a4; a new user
			// message after them ends the path.
			parent := "a4"
			for i, e := range tt.extra {
				e.ID, e.ParentID, e.Timestamp = string(rune('a'+i))+"x", parent, "2026-01-01T00:00:01.000Z"
				if e.Type == EntryCompaction {
					e.ID = "c"
				}
				tr.add(e)
				parent = e.ID
			}
			c := tr.Context(parent)
			if d := cmp.Diff(tt.want, shape(c.Messages)); d != "" {
				t.Errorf("context (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantIDs, c.EntryIDs); d != "" {
				t.Errorf("entry ids (-want +got):\n%s", d)
			}
			if e, _ := tr.Entry("u4"); len(e.Message.Content) != 1 {
				t.Error("building the context changed a stored entry")
			}
		})
	}
}

func TestSnipEntryPersists(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s, err := st.Create(ctx, CreateOptions{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, text := range []string{"u1", "a1", "u2", "a2", "u3"} {
		m := user(text)
		if text[0] == 'a' {
			m = asst(llm.Text(text))
		}
		ids = append(ids, mustAppend(t, s, MessageEntry(m)))
	}
	mustAppend(t, s, SnipEntry(SnipData{FirstDroppedEntryID: ids[2], FirstKeptEntryID: ids[4], Note: "[gone]", DroppedMessages: 2}))
	live := s.Context()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := st.Load(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"u:u1", "a:a1", "u:[gone]|u3"}
	if d := cmp.Diff(want, shape(tr.Context("").Messages)); d != "" {
		t.Errorf("reloaded context (-want +got):\n%s", d)
	}
	if d := cmp.Diff(live, tr.Context("")); d != "" {
		t.Errorf("reloaded context differs from the live one (-live +reloaded):\n%s", d)
	}
}
