package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// pin makes every module of the tree dir (an export of the repository,
// holding tracked files only) require the repository's other modules at
// version, with no replace directive for them, and with their checksums in
// its go.sum, as a user's go command will find them once the modules are
// tagged at version. It packs each module as the module proxy will serve
// it (zip, go.mod, info), into proxy if not "", in the layout of a
// GOPROXY=file:// directory. Modules are pinned in the order of their
// requirements: a module's checksums cover its go.sum, which names those
// of the modules it requires.
func pin(dir, version, proxy string) ([]repoModule, error) {
	if !semverOK(version) {
		return nil, fmt.Errorf("%q is not a semantic version such as v0.1.0", version)
	}
	mods, err := readModules(dir)
	if err != nil {
		return nil, err
	}
	ours := make(map[string]bool, len(mods))
	for _, m := range mods {
		ours[m.Path] = true
	}
	order, deps, err := requirementOrder(dir, mods, ours)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "release-zips-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	sums := make(map[string][]string) // module path -> its two go.sum lines
	for _, m := range order {
		f, err := readGoMod(filepath.Join(dir, m.Dir))
		if err != nil {
			return nil, err
		}
		for _, r := range slices.Clone(f.Replace) {
			if ours[r.Old.Path] {
				if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					return nil, err
				}
			}
		}
		for _, r := range f.Require {
			if ours[r.Mod.Path] {
				if err := f.AddRequire(r.Mod.Path, version); err != nil {
					return nil, err
				}
			}
		}
		f.Cleanup()
		gomod, err := f.Format()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, m.Dir, "go.mod"), gomod, 0o644); err != nil {
			return nil, err
		}
		if err := rewriteSums(filepath.Join(dir, m.Dir, "go.sum"), ours, deps[m.Path], sums); err != nil {
			return nil, err
		}
		lines, err := pack(dir, m, version, gomod, work, proxy)
		if err != nil {
			return nil, err
		}
		sums[m.Path] = lines
	}
	if err := pinWorkspace(dir, version, mods, ours); err != nil {
		return nil, err
	}
	return mods, nil
}

// pinWorkspace makes the workspace (go.work) of the tree dir replace each
// module of the repository at version by its directory: the nested
// modules require one another at version, which no proxy serves before
// the release (nor, for the version after it, until the next one), and
// the workspace builds them from the tree.
func pinWorkspace(dir, version string, mods []repoModule, ours map[string]bool) error {
	path := filepath.Join(dir, "go.work")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	work, err := modfile.ParseWork(path, data, nil)
	if err != nil {
		return err
	}
	for _, r := range slices.Clone(work.Replace) {
		if ours[r.Old.Path] {
			if err := work.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	for _, m := range mods {
		to := "./" + filepath.ToSlash(m.Dir)
		if m.Dir == "." {
			to = "."
		}
		if err := work.AddReplace(m.Path, version, to, ""); err != nil {
			return err
		}
	}
	work.Cleanup()
	return os.WriteFile(path, modfile.Format(work.Syntax), 0o644)
}

// requirementOrder returns mods with each after the repository modules it
// requires, and for each module every repository module it requires,
// directly or not.
func requirementOrder(dir string, mods []repoModule, ours map[string]bool) ([]repoModule, map[string][]string, error) {
	direct := make(map[string][]string)
	byPath := make(map[string]repoModule)
	for _, m := range mods {
		byPath[m.Path] = m
		f, err := readGoMod(filepath.Join(dir, m.Dir))
		if err != nil {
			return nil, nil, err
		}
		for _, r := range f.Require {
			if ours[r.Mod.Path] && r.Mod.Path != m.Path {
				direct[m.Path] = append(direct[m.Path], r.Mod.Path)
			}
		}
	}
	var order []repoModule
	done := make(map[string]bool)
	visiting := make(map[string]bool)
	all := make(map[string][]string)
	var visit func(p string) error
	visit = func(p string) error {
		if done[p] {
			return nil
		}
		if visiting[p] {
			return fmt.Errorf("the modules' requirements go round in a cycle through %s", p)
		}
		visiting[p] = true
		var reach []string
		for _, d := range direct[p] {
			if err := visit(d); err != nil {
				return err
			}
			reach = append(reach, d)
			reach = append(reach, all[d]...)
		}
		slices.Sort(reach)
		all[p] = slices.Compact(reach)
		done[p] = true
		order = append(order, byPath[p])
		return nil
	}
	for _, m := range mods {
		if err := visit(m.Path); err != nil {
			return nil, nil, err
		}
	}
	return order, all, nil
}

// rewriteSums drops the lines of the repository's modules from the go.sum
// at path and adds those of deps, the repository modules its module
// requires, from sums. A module with no go.sum and no such dependency
// keeps having none.
func rewriteSums(path string, ours map[string]bool, deps []string, sums map[string][]string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && !ours[fields[0]] {
			lines = append(lines, line)
		}
	}
	for _, d := range deps {
		lines = append(lines, sums[d]...)
	}
	if len(lines) == 0 && len(data) == 0 {
		return nil
	}
	slices.Sort(lines)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// pack zips module m of the tree dir at version, as the module proxy
// serves it, into work (and into proxy, with its go.mod and info, if
// proxy is not ""), and returns its two go.sum lines.
func pack(dir string, m repoModule, version string, gomod []byte, work, proxy string) ([]string, error) {
	mv := module.Version{Path: m.Path, Version: version}
	zipPath := filepath.Join(work, strings.ReplaceAll(m.Path, "/", "_")+".zip")
	zf, err := os.Create(zipPath)
	if err != nil {
		return nil, err
	}
	err = modzip.CreateFromDir(zf, mv, filepath.Join(dir, m.Dir))
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", m.Path, err)
	}
	zipSum, err := dirhash.HashZip(zipPath, dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	if proxy != "" {
		if err := writeProxyFiles(proxy, mv, zipPath, gomod); err != nil {
			return nil, err
		}
	}
	return []string{
		fmt.Sprintf("%s %s %s", m.Path, version, zipSum),
		fmt.Sprintf("%s %s/go.mod %s", m.Path, version, modSum),
	}, nil
}

// writeProxyFiles writes the files through which a GOPROXY=file://proxy
// serves mv: its version list, info, go.mod and zip.
func writeProxyFiles(proxy string, mv module.Version, zipPath string, gomod []byte) error {
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	v := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		return err
	}
	zipData, err := os.ReadFile(zipPath)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"list":               []byte(mv.Version + "\n"),
		mv.Version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`+"\n", mv.Version),
		mv.Version + ".mod":  gomod,
		mv.Version + ".zip":  zipData,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(v, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
