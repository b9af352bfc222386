package postgrestest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

func TestMain(m *testing.M) { os.Exit(postgrestest.Run(m)) }

// childEnv marks the run of this test binary that TestRunSaysWhatSkipped
// starts.
const childEnv = "POSTGRESTEST_CHILD"

// TestChildNeedsPostgres needs PostgreSQL; it runs only as the child of
// TestRunSaysWhatSkipped.
func TestChildNeedsPostgres(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("run by TestRunSaysWhatSkipped")
	}
	postgrestest.DSN(t)
	t.Log("PostgreSQL is there")
}

// TestRunSaysWhatSkipped runs this test binary again without
// KEELPAY_TEST_POSTGRES: the test that needs PostgreSQL skips, the run
// passes, and Run's line names the package, the count and the variable.
// With KEELPAY_REQUIRE_POSTGRES=1 the same run fails.
func TestRunSaysWhatSkipped(t *testing.T) {
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildNeedsPostgres$", "-test.count=1")
		env := []string{childEnv + "=1", postgrestest.EnvRequire + "=" + require}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, postgrestest.EnvDSN+"=") && !strings.HasPrefix(kv, postgrestest.EnvRequire+"=") {
				env = append(env, kv)
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil {
		t.Fatalf("without PostgreSQL the run should pass with a skip: %v\n%s", err, out)
	}
	want := "storage/postgres/postgrestest: 1 PostgreSQL test skipped: KEELPAY_TEST_POSTGRES is not set (KEELPAY_REQUIRE_POSTGRES=1 makes them fail)\n"
	if !strings.Contains(out, want) {
		t.Errorf("the output does not have %q:\n%s", want, out)
	}
	out, err = run("1")
	if err == nil {
		t.Errorf("with KEELPAY_REQUIRE_POSTGRES=1 the run should fail:\n%s", out)
	}
	if strings.Contains(out, "PostgreSQL test skipped") {
		t.Errorf("a failed test is not reported as skipped:\n%s", out)
	}
}

// TestSkipLineThroughTheGoCommand checks what the README says of the skip
// line, through the go command as a reader or CI runs it, with output
// piped and no controlling terminal (setsid: as in CI): go test -v and
// go test -json show the line, and the README's grep finds it; a plain
// go test shows only "ok" (the go command drops a passing package's
// output, stdout and stderr alike), which is why the README sends readers
// without a terminal to -v or KEELPAY_REQUIRE_POSTGRES=1.
func TestSkipLineThroughTheGoCommand(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("not in the child")
	}
	if testing.Short() {
		t.Skip("runs the go command")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid")
	}
	env := []string{childEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, postgrestest.EnvDSN+"=") && !strings.HasPrefix(kv, postgrestest.EnvRequire+"=") {
			env = append(env, kv)
		}
	}
	goTest := func(pipeline string) string {
		t.Helper()
		cmd := exec.Command("setsid", "bash", "-o", "pipefail", "-c",
			"go test -count=1 -run '^TestChildNeedsPostgres$' "+pipeline)
		cmd.Env = env
		cmd.Stdin = nil
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", pipeline, err, out)
		}
		return string(out)
	}
	line := "storage/postgres/postgrestest: 1 PostgreSQL test skipped: KEELPAY_TEST_POSTGRES is not set"
	if out := goTest("-v . | cat"); !strings.Contains(out, line) {
		t.Errorf("go test -v, piped, does not show the line:\n%s", out)
	}
	if out := goTest("-json . | cat"); !strings.Contains(out, "1 PostgreSQL test skipped") {
		t.Errorf("go test -json does not show the line:\n%s", out)
	}
	// The README's command.
	if out := goTest("-v ./ | grep 'PostgreSQL test'"); !strings.Contains(out, line) {
		t.Errorf("the README's grep does not find the line:\n%s", out)
	}
	if out := goTest(". | cat"); strings.Contains(out, "PostgreSQL test") {
		t.Logf("the go command now shows a passing package's output; the README can say so:\n%s", out)
	}
}
