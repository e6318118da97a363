// Package docker is the sandbox backend that runs each sandbox as a
// container on a Docker engine, local or remote, through the Engine API
// (the github.com/moby/moby/client SDK, with API version negotiation: it
// speaks to any engine of API 1.40 or newer, such as Debian 12's docker.io
// 20.10, API 1.41). It registers itself as "docker"; blank-import it and
// call sandbox.Open(ctx, "docker", opts), or call Open for the concrete
// *Backend.
//
// # Engines and placement
//
// Options.Hosts names the engines: unix:///path, tcp://host:port (TLS from
// $DOCKER_CERT_PATH and $DOCKER_TLS_VERIFY) or ssh://[user@]host[:port]
// (each connection runs `ssh host docker system dial-stdio`, as the docker
// CLI does); none means $DOCKER_HOST or unix:///var/run/docker.sock. Open
// keeps the engines that answer within 10 s, and fails with an error
// wrapping sandbox.ErrUnavailable when none does. Create places a sandbox
// on the least-loaded engine, counting the live sandboxes this Backend has
// on each per CPU of the engine (ties go to the first engine named); on an
// engine that lacks the image or does not answer, it tries the next. The
// image must be on the engines that should run it: build or import it on
// each of Backend.Engines with package sandbox/image. Nothing is ever
// pulled.
//
// # Containers
//
// A sandbox is one container of Spec.Image (default DefaultImage) whose
// entrypoint is replaced by the keeper, the container's PID 1 itself: bash
// running sandbox.KeeperLoop on an open, empty stdin (it ignores every
// signal it can, reaps the orphans it inherits, and the kernel keeps
// SIGKILL and SIGSTOP from reaching a namespace's init from inside), so
// nothing in the container, root as it is there, can stop it; an image
// without bash gets an idle sleep under sh. With:
//
//   - memory, CPU and PID limits from Spec.Limits (zero fields take
//     sandbox.DefaultLimits): Memory with MemorySwap equal to it (no swap),
//     NanoCPUs, PidsLimit. A memory hog is OOM-killed inside the container
//     (its command exits 137), a fork bomb stops at the PID limit, and
//     neither takes the container down. Disk: Limits.DiskBytes as the
//     container's storage size (StorageOpt size) where the engine's
//     storage driver has quotas (overlay2 on xfs with pquota, btrfs, zfs);
//     on others, overlay2 on ext4 among them (this project's machines), the
//     engine refuses it, the Backend logs that once and creates the
//     container without: its disk is then not bounded (Backend.DiskQuota).
//   - network mode none unless Spec.Network (then the engine's default
//     bridge);
//   - every capability dropped but Capabilities, and no-new-privileges;
//   - Spec.Labels plus sandbox.LabelOwner (the Backend's owner) and
//     LabelSandbox (the sandbox's ID) on the container;
//   - Spec.Workdir (default /workspace) as the working directory, created
//     by the engine in the container's own layer, so that a snapshot
//     (docker commit) includes it; Spec.Env in every process's environment;
//   - no log driver (the idle process writes nothing);
//   - Spec.Mounts as bind mounts (HostConfig.Mounts, read-only where the
//     Mount says so): Source is a path on the engine's host, which must
//     exist there (the engine refuses the container otherwise), and
//     Target is made in the container if missing. A snapshot (docker
//     commit) leaves the mounts out; the restored container mounts them
//     again. CopyIn into a read-only mount fails.
//
// Create returns once the container runs: a cold start to the first output
// of an Exec takes about 540 ms on a 2-core machine (p50; see the
// benchmarks), which warm pools hide.
//
// # Commands and processes
//
// Exec runs each command as an exec of the container. The command starts
// under a one-line /bin/sh prelude that prints its PID on stderr (taken
// off before the output is kept) and then becomes the command; an exec'd
// process leads its own session and process group, so at ExecRequest.Timeout,
// or when ctx ends, a second exec sends SIGKILL to the whole group. Stdout
// and stderr are demultiplexed (stdcopy) into sandbox.CappedBuffers of
// MaxOutput each; stdin, when given, is copied in and closed. A command that
// exits 137 or whose stream breaks makes Exec inspect the container: when
// it is not running (killed or removed from outside, OOM of the init) the
// error wraps sandbox.ErrGone, and the sandbox stays gone (IsValid is
// false) until a Restore. One Exec round trip costs about 100 ms, nearly
// all of it the engine starting the process (runc exec); for many small
// commands use a persistent shell.
//
// KillAll (sandbox.Killer) runs kill -9 -1 with the keeper's own running
// bash (/proc/1/exe, which nothing in the container can change) and then
// asks the engine for the container's processes (ps on the engine's host):
// the keeper alone, zombies aside, and it is done, in two engine calls. If
// not (a library bash loads was replaced, a process was forking), it
// tears the PID namespace down: the engine kills PID 1, which ends every
// process in the container whatever its session or group, and starts the
// container again, its filesystem as it was, at the cost of a container
// start. Nothing of the container's own that the agent could replace
// decides the outcome.
//
// Start runs a long-lived process through an attached exec: one hijacked
// connection carries its stdin and its output, stderr pointed at stdout
// inside the sandbox so the two keep their order (or a terminal, with TTY).
// sandbox.NewShell builds the persistent shell on it; a command through it
// takes about 0.3 ms. Kill kills the process group from a second exec.
//
// CopyIn and CopyOut are the engine's archive endpoints (tar streams);
// CopyIn creates its directory first when it is missing, and paths are
// relative to the working directory.
//
// # Snapshot and restore
//
// Snapshot commits the container (paused while it does) to an image on its
// engine carrying the owner label and LabelSnapshot; it takes about 150 ms
// for a small change. Restore replaces the container by one started from
// that image, and removes the old one in the background; processes of the
// old one end, persistent shells included. So that a reset does not wait
// for a container start (about 400 ms), Snapshot and Restore start the next
// container ahead, a standby, which the next Restore of the same snapshot
// puts in place: Restore then takes a few milliseconds, and the first
// output after it about 100 ms (one exec). The cost is a second, idle
// container per snapshotted sandbox (its keeper and the engine's shim). Release removes the snapshot's image once no container made from
// it remains.
//
// # Owners, labels, reaping and closing
//
// Every container and snapshot image carries sandbox.LabelOwner, the
// Backend's owner. Options.Owner defaults to sandbox.NewOwnerID(), a lease
// on the process that opened the Backend ("<hostname>-<pid>-<start
// time>-<random>"), so each Backend has an owner of its own and processes
// that share an engine (a serve and a `tasks validate`, two test binaries)
// keep apart. Open reaps by mark and sweep on every engine: it lists the
// containers and snapshot images that carry the owner label and removes
// those of its own owner (an earlier run's, when the owner is explicit)
// and those of every owner that sandbox.OwnerAlive knows (made by a
// process of this hostname) and finds ended (the process is gone, or its
// pid now names a process with another start time); containers go first,
// then images. Resources of live owners and of unknown owners (explicit
// ones, other hosts') are never touched, so Backends open at once, in one
// process or several, do not reap each other, and what a crashed process
// left is removed by the next Backend opened on this host. Reap(ctx, owner)
// lists them by one owner's label and removes those the Backend does not
// hold, whether that owner is alive or not, marking by name before the
// engine creates anything so that a concurrent Create is never swept;
// Close reaps its own owner again after it has closed every sandbox and
// released every snapshot. Processes that share an engine must not share
// an explicit owner (--set sandbox.owner=NAME): each one's Open would
// remove the other's containers. Sandbox.Close removes the container (and
// its standby); it is idempotent.
//
// # Concurrency
//
// A Backend's methods are safe for concurrent use, and so are a Sandbox's
// Exec, CopyIn, CopyOut and Start; Snapshot and Restore are serialized per
// sandbox. Contexts bound the calls they are passed to and are not kept;
// the background work (removing replaced containers, starting standbys) is
// owned by the Backend, which Close waits for.
//
// # Running an engine
//
// scripts/deps.sh installs docker.io and starts dockerd when no engine
// answers (as root; the log goes to /var/log/nextstate-dockerd.log). The
// multi-engine tests start a second dockerd with its own socket, exec root,
// pid file and data root, in a network namespace of its own: a dockerd
// started with --bridge=none deletes the host's docker0 otherwise.
package docker
