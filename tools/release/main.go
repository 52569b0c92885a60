// Command release pins the repository's modules to a version and tags
// them, so that a user's go command finds each one at that version with
// `go install .../cmd/twq@VERSION` and `go get .../durable/redisstore@VERSION`.
// To tag v0.1.0:
//
//	go run ./tools/release -tag v0.1.0
//
// It exports the commit HEAD (tracked files only, as the module proxy will
// see the tags), makes every nested module require the repository's other
// modules at the version, with no replace directive and with their
// checksums in its go.sum, and copies those go.mod and go.sum files back.
// With -tag it commits them and tags each module: v0.1.0 for the root,
// durable/redisstore/v0.1.0 for a nested one. With -proxy DIR it also
// writes the modules as a GOPROXY=file://DIR serves them, to try the
// release before pushing it. See RELEASING.md.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	proxy := flag.String("proxy", "", "also write the modules into this directory, in the layout of a GOPROXY=file:// directory")
	tag := flag.Bool("tag", false, "commit the pinned go.mod and go.sum files and tag every module")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: release [-repo DIR] [-proxy DIR] [-tag] VERSION")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*repo, flag.Arg(0), *proxy, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(repo, version, proxy string, tag bool) error {
	if out, err := git(repo, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if out != "" {
		return errors.New("the repository has uncommitted changes; the release is made of HEAD:\n" + out)
	}
	tree, err := os.MkdirTemp("", "release-tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	if err := export(repo, tree); err != nil {
		return err
	}
	mods, err := pin(tree, version, proxy)
	if err != nil {
		return err
	}
	files := []string{"go.work"}
	for _, m := range mods {
		files = append(files, filepath.Join(m.Dir, "go.mod"), filepath.Join(m.Dir, "go.sum"))
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(tree, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, name), data, 0o644); err != nil {
			return err
		}
	}
	if !tag {
		fmt.Printf("pinned %d modules to %s; review with git diff, then run again with -tag\n", len(mods), version)
		return nil
	}
	if _, err := git(repo, "commit", "-a", "-m", "release "+version+": the modules require each other at "+version); err != nil {
		return err
	}
	for _, m := range mods {
		t := m.tagPrefix() + version
		if _, err := git(repo, "tag", "-a", t, "-m", m.Path+" "+version); err != nil {
			return err
		}
		fmt.Println("tagged", t)
	}
	fmt.Println("now push the commit and the tags: git push origin HEAD --follow-tags")
	return nil
}

// semverOK reports whether v is a release version a module of ours can
// have: canonical semantic version, major version 0 or 1 (the module paths
// have no /vN suffix).
func semverOK(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == v && (semver.Major(v) == "v0" || semver.Major(v) == "v1")
}

// export writes the tracked files of repo's HEAD into dir.
func export(repo, dir string) error {
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", "HEAD")
	untar := exec.Command("tar", "-x", "-C", dir)
	var archiveErr, untarErr bytes.Buffer // one each: the two write at once
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, untarErr.String())
	}
	return nil
}

func git(repo string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
