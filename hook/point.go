package hook

// Point names a place in a run's lifecycle where hooks fire.
type Point string

// The points, in roughly the order a run meets them.
const (
	// Session and prompt.
	SessionStart     Point = "session_start"      // contexts concatenated
	UserPromptSubmit Point = "user_prompt_submit" // may refuse the prompt; contexts concatenated

	// Run setup.
	BeforeModelResolve Point = "before_model_resolve" // first defined override wins
	BeforeAgentStart   Point = "before_agent_start"   // legacy: the fields of the two points around it
	BeforePromptBuild  Point = "before_prompt_build"  // system prompt first defined wins; contexts concatenated

	// Model calls.
	LLMInput  Point = "llm_input"  // void
	LLMOutput Point = "llm_output" // void

	// Tool calls.
	BeforeToolCall    Point = "before_tool_call"    // may block (stopping the rest) or rewrite the arguments
	AfterToolCall     Point = "after_tool_call"     // void
	ToolResultPersist Point = "tool_result_persist" // may rewrite the result before it is stored

	// Compaction.
	BeforeCompaction Point = "before_compaction" // void
	AfterCompaction  Point = "after_compaction"  // void

	// The end of a run.
	Stop                Point = "stop"                  // may make the run go on
	BeforeAgentFinalize Point = "before_agent_finalize" // first defined action wins
	AgentEnd            Point = "agent_end"             // void
	SessionEnd          Point = "session_end"           // void

	// Subagents (package subagent), fired on the parent run's bus.
	SubagentStart Point = "subagent_start" // void
	SubagentStop  Point = "subagent_stop"  // void
)

// Points lists every point.
var Points = []Point{
	SessionStart, UserPromptSubmit,
	BeforeModelResolve, BeforeAgentStart, BeforePromptBuild,
	LLMInput, LLMOutput,
	BeforeToolCall, AfterToolCall, ToolResultPersist,
	BeforeCompaction, AfterCompaction,
	Stop, BeforeAgentFinalize, AgentEnd, SessionEnd,
	SubagentStart, SubagentStop,
}

const numPoints = 18

// Void reports whether the hooks of p only observe: they run concurrently
// and their answers are not merged.
func (p Point) Void() bool {
	switch p {
	case LLMInput, LLMOutput, AfterToolCall, BeforeCompaction, AfterCompaction, AgentEnd, SessionEnd, SubagentStart, SubagentStop:
		return true
	}
	return false
}

// Valid reports whether p is one of Points.
func (p Point) Valid() bool {
	_, ok := p.index()
	return ok
}

var pointIndex = func() map[Point]int {
	m := make(map[Point]int, len(Points))
	for i, p := range Points {
		m[p] = i
	}
	return m
}()

func (p Point) index() (int, bool) {
	i, ok := pointIndex[p]
	return i, ok
}
