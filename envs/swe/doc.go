// Package swe is the SWE env: SWE-bench-format instances (Instance,
// LoadInstances), a sandbox with the repository at its base commit, an
// editor tool, and an evaluation harness that judges a diff in a fresh
// sandbox by the instance's FAIL_TO_PASS and PASS_TO_PASS tests.
package swe
