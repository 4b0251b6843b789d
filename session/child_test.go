package session

const childEnv = "AGENTLOOP_SESSION_TEST_CHILD"

func crashChild() {}
func lockChild()  {}
