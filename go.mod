module github.com/agentloop/agentloop

go 1.26.0

require github.com/google/jsonschema-go v0.4.3
