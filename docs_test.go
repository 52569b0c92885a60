package timingwheel_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every ```go block of README.md and of the Markdown files under docs/ must
// build, so that the docs cannot drift from the code: TestDocSnippetsBuild
// writes each block into a package of a temporary module, in a workspace
// (go.work) that also uses every module of the repository's go.work, and
// runs go vet over them all. Snippets that import durable/pgstore,
// durable/redisstore or any other nested module build against the working
// tree, as the root module's do.
//
// A block is one of three kinds:
//
//   - a file: it starts with a package clause (after comments). It is built
//     as it is, alone in its package (as main.go, or snippet_test.go if its
//     package ends in _test or it declares a Test function).
//   - a body: the statements of a main function. The test wraps it in
//     func main() and adds the imports of the packages it names (see
//     snippetImports: the standard library's and this repository's usual
//     names, pgx, pgxpool, redis, clock). Variables it declares at its top
//     level may go unused (a snippet shows what a call returns).
//   - a fragment: a body whose first line is "// fragment". It may also use
//     the variables a reader has from the text around it (see
//     snippetPrelude: ctx, q, w, pool, db, ...), declared for it. Keep these
//     few.
//
// Every block must also be gofmt'd (a body as it would be inside main).
// Compile errors name the Markdown file and line, through //line
// directives.
func TestDocSnippetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every Go block of the docs with go vet, over every module: not with -short")
	}
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	blocks := docBlocks(t, root)
	require.NotEmpty(t, blocks)

	dir := t.TempDir()
	work := writeSnippetWorkspace(t, root, dir)
	counts := map[string]int{}
	for i, b := range blocks {
		src, name, err := b.source()
		if err != nil {
			t.Errorf("%s:%d: %v", b.file, b.line, err)
			continue
		}
		counts[b.kind()]++
		if msg := b.gofmtCheck(); msg != "" {
			t.Errorf("%s:%d: %s", b.file, b.line, msg)
		}
		pkg := filepath.Join(dir, fmt.Sprintf("s%03d", i))
		require.NoError(t, os.Mkdir(pkg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, name), src, 0o644))
	}
	t.Logf("%d Go blocks in the docs: %d files, %d bodies, %d fragments", len(blocks), counts["file"], counts["body"], counts["fragment"])

	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+work, "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// "# PACKAGE" heads the errors of each package: a package of the
		// repository that does not build fails the snippets that import it.
		var broken []string
		for _, line := range strings.Split(string(out), "\n") {
			if pkg, ok := strings.CutPrefix(line, "# "); ok && !strings.Contains(pkg, "docsnippets") {
				broken = append(broken, pkg)
			}
		}
		if len(broken) > 0 {
			t.Errorf("packages the docs import do not build, so their snippets cannot be checked: %s", strings.Join(broken, ", "))
		}
		t.Fatalf("the docs' Go blocks do not build (go vet in %s, GOWORK=%s): %v\n%s", dir, work, err, out)
	}
}

// A docBlock is a ```go block of a Markdown file.
type docBlock struct {
	file string // relative to the repository's root
	abs  string // absolute path, for //line directives
	line int    // the line of the block's first line of code
	code string
}

// docBlocks returns the ```go blocks of README.md and docs/**/*.md.
func docBlocks(t *testing.T, root string) []docBlock {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	var blocks []docBlock
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		for _, b := range goBlocks(string(data)) {
			b.file, b.abs = f, filepath.Join(root, f)
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// goBlocks returns the ```go blocks of a Markdown text, with the line of
// their first line of code. A fence may be indented (in a list).
func goBlocks(doc string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	var indent string
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			indent = line[:strings.Index(line, "```")]
			cur = &docBlock{line: n + 1}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	return blocks
}

var packageClause = regexp.MustCompile(`(?m)^package [A-Za-z_][A-Za-z0-9_]*\s*$`)

// kind is "file", "body" or "fragment".
func (b docBlock) kind() string {
	switch {
	case packageClause.MatchString(b.code):
		return "file"
	case strings.HasPrefix(b.code, "// fragment"):
		return "fragment"
	default:
		return "body"
	}
}

// source returns the Go file of the block and its file name.
func (b docBlock) source() ([]byte, string, error) {
	if b.kind() == "file" {
		name := "main.go"
		if m := regexp.MustCompile(`(?m)^package \w+_test\s*$|^func Test\w*\(t \*testing\.T\)`).FindString(b.code); m != "" {
			name = "snippet_test.go"
		}
		return []byte(fmt.Sprintf("//line %s:%d\n%s", b.abs, b.line, b.code)), name, nil
	}
	return b.wrapBody()
}

// snippetImports are the packages a body or fragment may name without
// importing them.
var snippetImports = map[string]string{
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"http":        "net/http",
	"log":         "log",
	"os":          "os",
	"signal":      "os/signal",
	"slog":        "log/slog",
	"sql":         "database/sql",
	"strings":     "strings",
	"sync":        "sync",
	"time":        "time",
	"clock":       "github.com/benbjohnson/clock",
	"pgx":         "github.com/jackc/pgx/v5",
	"pgxpool":     "github.com/jackc/pgx/v5/pgxpool",
	"redis":       "github.com/redis/go-redis/v9",
	"otel":        "go.opentelemetry.io/otel",
	"timingwheel": "github.com/seed64e23a5c/timingwheel",
	"queue":       "github.com/seed64e23a5c/timingwheel/queue",
	"delayqueue":  "github.com/seed64e23a5c/timingwheel/delayqueue",
	"durable":     "github.com/seed64e23a5c/timingwheel/durable",
	"boltstore":   "github.com/seed64e23a5c/timingwheel/durable/boltstore",
	"memstore":    "github.com/seed64e23a5c/timingwheel/durable/memstore",
	"store":       "github.com/seed64e23a5c/timingwheel/durable/store",
	"pgstore":     "github.com/seed64e23a5c/timingwheel/durable/pgstore",
	"redisstore":  "github.com/seed64e23a5c/timingwheel/durable/redisstore",
	"mysqlstore":  "github.com/seed64e23a5c/timingwheel/durable/mysqlstore",
	"durableotel": "github.com/seed64e23a5c/timingwheel/durable/durableotel",
	"durableweb":  "github.com/seed64e23a5c/timingwheel/durable/durableweb",
}

// snippetPrelude are the variables a fragment may use without declaring
// them: what the text around it has made.
var snippetPrelude = map[string]string{
	"ctx":    "context.Background()",
	"q":      "(*durable.Queue)(nil)",
	"w":      "(*timingwheel.TimingWheel)(nil)",
	"pool":   "(*pgxpool.Pool)(nil)",
	"db":     "(*sql.DB)(nil)",
	"client": "redis.UniversalClient(nil)",
	"mux":    "http.NewServeMux()",
	"body":   "[]byte(nil)",
	// closeOrder is the application's work on a delivery.
	"closeOrder": "func(ctx context.Context, id string) error { return nil }",
}

// wrapBody returns a body or fragment as a main package.
func (b docBlock) wrapBody() ([]byte, string, error) {
	fragment := b.kind() == "fragment"
	bare := "package main\n\nfunc main() {\n" + b.code + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", bare, 0)
	if err != nil {
		return nil, "", fmt.Errorf("the block does not parse as the body of a function: %v", err)
	}
	var used, prelude []string
	for _, id := range f.Unresolved {
		if fragment {
			if _, ok := snippetPrelude[id.Name]; ok && !slices.Contains(prelude, id.Name) {
				prelude = append(prelude, id.Name)
			}
		}
		if _, ok := snippetImports[id.Name]; ok && !slices.Contains(used, id.Name) {
			used = append(used, id.Name)
		}
	}
	for _, name := range prelude { // the prelude's types name packages too
		for pkg := range snippetImports {
			if strings.Contains(snippetPrelude[name], pkg+".") && !slices.Contains(used, pkg) {
				used = append(used, pkg)
			}
		}
	}
	sort.Strings(used)
	sort.Strings(prelude)

	var src bytes.Buffer
	src.WriteString("package main\n\nimport (\n")
	for _, name := range used {
		fmt.Fprintf(&src, "\t%s %q\n", name, snippetImports[name])
	}
	src.WriteString(")\n\n")
	for _, name := range prelude {
		fmt.Fprintf(&src, "var %s = %s\n", name, snippetPrelude[name])
	}
	fmt.Fprintf(&src, "\nfunc main() {\n//line %s:%d\n%s", b.abs, b.line, b.code)
	// What the body declares at its top level may go unused.
	for _, name := range topLevelVars(f) {
		fmt.Fprintf(&src, "\t_ = %s\n", name)
	}
	src.WriteString("}\n")
	return src.Bytes(), "main.go", nil
}

// topLevelVars returns the variables declared by the statements of the
// function main of f, at its top level.
func topLevelVars(f *ast.File) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "main" {
			continue
		}
		for _, st := range fn.Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, e := range st.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							add(id)
						}
					}
				}
			case *ast.DeclStmt:
				if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, s := range gd.Specs {
						for _, id := range s.(*ast.ValueSpec).Names {
							add(id)
						}
					}
				}
			}
		}
	}
	return names
}

// gofmtCheck returns what gofmt would change in the block, or "".
func (b docBlock) gofmtCheck() string {
	if b.kind() == "file" {
		out, err := format.Source([]byte(b.code))
		if err != nil {
			return "gofmt: " + err.Error()
		}
		if string(out) != b.code {
			return "not gofmt'd; gofmt makes it:\n" + string(out)
		}
		return ""
	}
	// A body as gofmt would lay it out inside a function, indented by one
	// tab (added, then taken off again).
	var in strings.Builder
	in.WriteString("package p\n\nfunc _() {\n")
	for _, line := range strings.SplitAfter(b.code, "\n") {
		if strings.TrimSpace(line) != "" {
			in.WriteString("\t")
		}
		in.WriteString(line)
	}
	in.WriteString("}\n")
	out, err := format.Source([]byte(in.String()))
	if err != nil {
		return "gofmt: " + err.Error()
	}
	body := strings.TrimSuffix(strings.TrimPrefix(string(out), "package p\n\nfunc _() {\n"), "}\n")
	var got strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		got.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if got.String() != b.code {
		return "not gofmt'd; gofmt makes it:\n" + got.String()
	}
	return ""
}

// writeSnippetWorkspace writes, in dir, the go.mod of the snippets' module
// and a go.work that uses it and every module of the repository's go.work,
// with its replace directives, by absolute paths; it returns the go.work's
// path.
func writeSnippetWorkspace(t *testing.T, root, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	require.NoError(t, err)
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	var goLine string
	var uses, replaces []string
	inUse := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "//"):
		case f[0] == "go" && len(f) == 2:
			goLine = line
		case f[0] == "use" && len(f) == 2 && f[1] == "(":
			inUse = true
		case f[0] == "use" && len(f) == 2:
			uses = append(uses, abs(f[1]))
		case inUse && f[0] == ")":
			inUse = false
		case inUse:
			uses = append(uses, abs(f[0]))
		case f[0] == "replace":
			// replace PATH [VERSION] => DIR
			i := slices.Index(f, "=>")
			require.True(t, i > 0 && i == len(f)-2, "go.work: a replace this test does not read: %q", line)
			replaces = append(replaces, strings.Join(f[1:i], " ")+" => "+abs(f[i+1]))
		}
	}
	require.NotEmpty(t, goLine, "go.work has no go line")
	require.NotEmpty(t, uses, "go.work uses no module")

	var w strings.Builder
	fmt.Fprintf(&w, "%s\n\nuse (\n\t.\n", goLine)
	for _, u := range uses {
		fmt.Fprintf(&w, "\t%s\n", u)
	}
	w.WriteString(")\n\n")
	for _, r := range replaces {
		fmt.Fprintf(&w, "replace %s\n", r)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module docsnippets\n\n"+goLine+"\n"), 0o644))
	work := filepath.Join(dir, "go.work")
	require.NoError(t, os.WriteFile(work, []byte(w.String()), 0o644))
	return work
}

// The extraction itself: fences in lists, the three kinds, a fragment's
// prelude and imports, and a body's unused variables.
func TestDocSnippetsExtraction(t *testing.T) {
	doc := "Text.\n\n```go\nx := 1\n```\n\n- item:\n\n  ```go\n  // fragment\n  err := q.Enqueue(ctx, durable.Message{ID: \"a\"})\n  ```\n\n```go\npackage main\n\nfunc main() {}\n```\n\n```sh\nnot go\n```\n"
	blocks := goBlocks(doc)
	require.Len(t, blocks, 3)
	require.Equal(t, 4, blocks[0].line)
	require.Equal(t, "body", blocks[0].kind())
	require.Equal(t, "fragment", blocks[1].kind())
	require.Equal(t, 10, blocks[1].line)
	require.Equal(t, "// fragment\nerr := q.Enqueue(ctx, durable.Message{ID: \"a\"})\n", blocks[1].code)
	require.Equal(t, "file", blocks[2].kind())

	blocks[1].abs = "/x/doc.md"
	src, name, err := blocks[1].source()
	require.NoError(t, err)
	require.Equal(t, "main.go", name)
	for _, want := range []string{
		"\tcontext \"context\"\n", "\tdurable \"github.com/seed64e23a5c/timingwheel/durable\"\n",
		"var ctx = context.Background()\n", "var q = (*durable.Queue)(nil)\n",
		"//line /x/doc.md:10\n", "\t_ = err\n",
	} {
		require.Contains(t, string(src), want)
	}
	require.Empty(t, blocks[0].gofmtCheck())
	require.NotEmpty(t, docBlock{code: "x:=1\n"}.gofmtCheck())
}
