package subagent

const helperEnv = "SUBAGENT_TEST_HELPER"

func crashHelper() { select {} }
