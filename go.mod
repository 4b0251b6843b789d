module github.com/agentloop/agentloop

go 1.26.0

require (
	github.com/google/jsonschema-go v0.4.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)
