package pgstore

import (
	"testing"

	"github.com/agentloop/agentloop/internal/pgtest"
)

var (
	pg       *pgtest.Server
	pgReason error
)

func TestMain(m *testing.M) { pgtest.Main(m, &pg, &pgReason) }
