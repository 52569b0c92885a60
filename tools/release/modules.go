package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// A repoModule is a module of the repository: its path and its directory, relative to the
// repository's root ("." for the root module).
type repoModule struct {
	Path string
	Dir  string
}

// tagPrefix is what a tag of m starts with: "" for the root module, the
// directory and a slash for a nested one (durable/redisstore/v0.1.0), as
// the go command looks for a nested module's versions.
func (m repoModule) tagPrefix() string {
	if m.Dir == "." {
		return ""
	}
	return filepath.ToSlash(m.Dir) + "/"
}

// readModules returns the modules that the workspace of repo (its go.work)
// uses, the root module first.
func readModules(repo string) ([]repoModule, error) {
	data, err := os.ReadFile(filepath.Join(repo, "go.work"))
	if err != nil {
		return nil, err
	}
	work, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, err
	}
	var mods []repoModule
	for _, u := range work.Use {
		dir := filepath.Clean(u.Path)
		f, err := readGoMod(filepath.Join(repo, dir))
		if err != nil {
			return nil, err
		}
		mods = append(mods, repoModule{Path: f.Module.Mod.Path, Dir: dir})
	}
	// "." sorts before every directory name of the repository's.
	slices.SortFunc(mods, func(a, b repoModule) int { return strings.Compare(a.Dir, b.Dir) })
	if len(mods) == 0 || mods[0].Dir != "." {
		return nil, fmt.Errorf("%s/go.work does not use the root module (.)", repo)
	}
	return mods, nil
}

func readGoMod(dir string) (*modfile.File, error) {
	path := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}
