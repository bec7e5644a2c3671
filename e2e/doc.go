// Package e2e is podbot's end-to-end suite. It drives podbot through its
// public entry points (the podbot binary and the root package) against real
// Podman and real dockerd, started by scripts/engines.sh.
//
// The tests carry the e2e build tag and run with `make test-e2e`. Each engine
// is named by an environment variable (PODBOT_E2E_PODMAN_SOCKET,
// PODBOT_E2E_DOCKER_SOCKET); an engine that is named but does not answer a
// ping fails the suite, and under CI=true both engines must be named.
package e2e
