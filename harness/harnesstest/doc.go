// Package harnesstest is the conformance suite every harness.Harness
// passes (Run), and Fake, a scripted external engine with native threads,
// for the tests of the core's side of the contract.
package harnesstest
