package pgstore

import (
	"testing"

	"github.com/agentloop/agentloop/internal/pgtest"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { pg.Main(m) }
