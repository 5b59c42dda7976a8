package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The compat Maven project (test/compat/java) built by `make compat-prepare`.
// Its outputs are everything the Java-side peers need:
//
//	test/compat/java/target/classes/                 the tool + log4j2.xml
//	test/compat/java/target/cp.txt                   runtime classpath (jars in .cache/m2)
//	test/compat/java/target/offloaders/tiered-storage-jcloud.nar
const (
	compatJavaDir = "test/compat/java"
	// ToolMainClass is the main class of the Java tools (subcommands).
	ToolMainClass = "io.tierkeeper.compat.Tool"
)

// JavaBuild locates the built compat Maven project.
type JavaBuild struct {
	Java      string // java executable
	Dir       string // test/compat/java
	Classpath string // target/classes + the runtime classpath
	NarDir    string // directory holding tiered-storage-jcloud.nar
}

var (
	javaBuildOnce sync.Once
	javaBuildVal  *JavaBuild
	javaBuildErr  error
)

// FindJavaBuild returns the compat Maven build, or an error naming what is
// missing (install with `make compat-prepare`).
func FindJavaBuild() (*JavaBuild, error) {
	javaBuildOnce.Do(func() { javaBuildVal, javaBuildErr = findJavaBuild() })
	return javaBuildVal, javaBuildErr
}

func findJavaBuild() (*JavaBuild, error) {
	java := "java"
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if _, err := os.Stat(filepath.Join(jh, "bin", "java")); err == nil {
			java = filepath.Join(jh, "bin", "java")
		}
	}
	java, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("no java runtime (install openjdk-17-jdk-headless; make deps): %w", err)
	}
	dir := filepath.Join(RepoRoot(), compatJavaDir)
	cpFile := filepath.Join(dir, "target", "cp.txt")
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, fmt.Errorf("compat Maven project not built (run make compat-prepare): %w", err)
	}
	classes := filepath.Join(dir, "target", "classes")
	if _, err := os.Stat(filepath.Join(classes, "io", "tierkeeper", "compat", "Tool.class")); err != nil {
		return nil, fmt.Errorf("compat Java tool not compiled (run make compat-prepare): %w", err)
	}
	return &JavaBuild{
		Java:      java,
		Dir:       dir,
		Classpath: classes + string(os.PathListSeparator) + strings.TrimSpace(string(cp)),
		NarDir:    filepath.Join(dir, "target", "offloaders"),
	}, nil
}

// requireJavaBuild returns the build or marks t unavailable.
func requireJavaBuild(t testing.TB) *JavaBuild {
	t.Helper()
	b, err := FindJavaBuild()
	if err != nil {
		Unavailable(t, "%v", err)
	}
	return b
}

// JVMOptions are the options every harness JVM gets: small heap (heap, e.g.
// "128m"), serial GC, IPv4, the --add-opens BookKeeper's bin/common.sh uses
// on JDK 11+, and quick start-up. fastStart trades peak JIT speed for start-up
// time (C1 only); use it for servers whose CPU use is low.
func JVMOptions(heap string, fastStart bool) []string {
	opts := []string{
		"-Xms16m", "-Xmx" + heap, "-XX:MaxDirectMemorySize=" + heap,
		"-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xss512k",
		"-Djava.net.preferIPv4Stack=true",
		"-Dio.netty.tryReflectionSetAccessible=true",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"--add-opens", "java.base/java.io=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"-Dlog4j2.disable.jmx=true",
		"-Dzookeeper.jmx.log4j.disable=true",
	}
	if fastStart {
		opts = append(opts, "-XX:TieredStopAtLevel=1")
	}
	return opts
}

// Command returns an exec.Cmd running mainClass with the build's classpath.
func (b *JavaBuild) Command(jvmOpts []string, mainClass string, args ...string) *exec.Cmd {
	a := append([]string{}, jvmOpts...)
	a = append(a, "-cp", b.Classpath, mainClass)
	a = append(a, args...)
	cmd := exec.Command(b.Java, a...)
	cmd.Dir = b.Dir
	return cmd
}

// cleanupOn forwards everything to the embedded TB except Cleanup, which is
// registered on owner: a server restarted from inside one test keeps
// living as long as whoever started it first.
type cleanupOn struct {
	testing.TB
	owner testing.TB
}

func (c cleanupOn) Cleanup(f func()) { c.owner.Cleanup(f) }

// runJava runs a short-lived JVM, returning stdout; stderr (tail) goes into
// the error.
func runJava(ctx context.Context, timeout time.Duration, cmd *exec.Cmd) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	err := c.Run()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		tail := stderr.Bytes()
		if len(tail) > 6000 {
			tail = tail[len(tail)-6000:]
		}
		return stdout.Bytes(), fmt.Errorf("%w\nstderr (tail):\n%s", err, tail)
	}
	return stdout.Bytes(), nil
}
