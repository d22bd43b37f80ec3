package main

import (
	"testing"

	"github.com/scripthost/scripthost/internal/pgtest"
)

// TestMain stops the throwaway PostgreSQL server the shared-ledger tests may start.
func TestMain(m *testing.M) { pgtest.Main(m) }
