package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newInitCmd) }

func newInitCmd(g *globals) *cobra.Command {
	var ts bool
	var lang string
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Scaffold a workflow with a fixture that passes",
		Long: `Write a small workflow (JavaScript, or TypeScript with --ts) into DIR, with a fixture
that passes (fixtures/basic.json), a sample input (inbox/world.txt) and a README.
With --ts it also writes the sandbox's TypeScript declarations (scripthost.d.ts and the
others it ships), tools.d.ts for the Files and plan tools, and a tsconfig.json. Then:

  scripthost test DIR/workflow.js
  scripthost run DIR/workflow.js --once --workspace DIR

Existing files are never overwritten.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lang != "" {
				return scaffoldWasm(g, args[0], lang)
			}
			return scaffold(g, args[0], ts)
		},
	}
	cmd.Flags().BoolVar(&ts, "ts", false, "write workflow.ts (TypeScript) instead of workflow.js")
	cmd.Flags().StringVar(&lang, "lang", "", "write a Wasm workflow in rust, assemblyscript or go (with build.sh) instead")
	return cmd
}

// scaffold writes the starter files, refusing to overwrite any.
func scaffold(g *globals, dir string, ts bool) error {
	wf, src := "workflow.js", starterJS
	if ts {
		wf, src = "workflow.ts", starterTS
	}
	files := []starterFile{
		{wf, src},
		{filepath.Join("fixtures", "basic.json"), starterFixture},
		{filepath.Join("inbox", "world.txt"), "world\n"},
		{"README.md", strings.ReplaceAll(strings.ReplaceAll(starterREADME, "{{dir}}", filepath.ToSlash(dir)), "{{wf}}", wf)},
	}
	if ts {
		// The declarations an editor (or tsc) needs to check the workflow as it is
		// written: every file the sandbox ships, tools.d.ts and a tsconfig.json.
		decls, err := declarationFiles("")
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(decls)) {
			files = append(files, starterFile{name, string(decls[name])})
		}
		files = append(files, starterFile{"tsconfig.json", tsconfig})
	}
	if err := writeStarter(g, dir, files); err != nil {
		return err
	}
	w := filepath.ToSlash(filepath.Join(dir, wf))
	fmt.Fprintf(g.Stdout, "\nnext:\n  scripthost test %s\n  scripthost run %s --once --workspace %s\n", w, w, filepath.ToSlash(dir))
	return nil
}

// writeStarter writes files into dir, refusing to overwrite any.
func writeStarter(g *globals, dir string, files []starterFile) error {
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if _, err := os.Stat(p); err == nil {
			return usagef("init: %s already exists; nothing was written", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return usagef("init: %v", err)
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		fmt.Fprintf(g.Stdout, "wrote %s\n", filepath.ToSlash(p))
	}
	return nil
}

const starterJS = `// A starter workflow. The producer "scan" notices new files in inbox/ and publishes
// one event per file; the consumer "greet" reads the file and writes a greeting to
// outbox/ as its one mutation, then logs what it did.
export default {
  topics: ['names'],

  producers: {
    scan: {
      schedule: { every: '1m' },
      publishes: ['names'],
      async handler(state) {
        const seen = new Set((state && state.seen) || []);
        for (const e of await Files.list({ dir: 'inbox' })) {
          if (e.dir || seen.has(e.name)) continue;
          await Topics.publish({ topic: 'names', id: e.name, payload: { file: e.name } });
          seen.add(e.name);
        }
        return { seen: [...seen].sort() };
      },
    },
  },

  consumers: {
    greet: {
      subscribe: ['names'],
      async prepare(state) {
        const events = await Topics.peek({ topic: 'names', limit: 1 });
        if (events.length === 0) return { reservations: [], data: null };
        const ev = events[0];
        const file = await Files.read({ path: 'inbox/' + ev.payload.file });
        return {
          reservations: [{ topic: 'names', ids: [ev.id] }],
          data: { file: ev.payload.file, name: file.content.trim(), count: ((state && state.count) || 0) + 1 },
        };
      },
      async mutate(d) {
        if (!d) return;
        await Files.write({ path: 'outbox/' + d.file, content: 'Hello, ' + d.name + '!\n' });
      },
      async next(d, result) {
        if (!d) return undefined; // nothing reserved: keep the state
        console.log('greeted ' + d.name + ' (' + result.status + ')');
        return { count: d.count };
      },
    },
  },
};
`

const starterTS = `// A starter workflow. The producer "scan" notices new files in inbox/ and publishes
// one event per file; the consumer "greet" reads the file and writes a greeting to
// outbox/ as its one mutation, then logs what it did. The declarations beside it
// (scripthost.d.ts, tools.d.ts) type the globals, the tools and the definition: an
// editor checks the workflow as you write it, and so does scripthost validate.
interface ScanState { seen?: string[] }
interface GreetState { count?: number }
interface Greeting { file: string; name: string; count: number }

export default {
  topics: ['names'],

  producers: {
    scan: {
      schedule: { every: '1m' },
      publishes: ['names'],
      async handler(state: ScanState | undefined) {
        const seen = new Set<string>(state?.seen ?? []);
        for (const e of await Files.list({ dir: 'inbox' })) {
          if (e.dir || seen.has(e.name)) continue;
          await Topics.publish({ topic: 'names', id: e.name, payload: { file: e.name } });
          seen.add(e.name);
        }
        return { seen: [...seen].sort() };
      },
    },
  },

  consumers: {
    greet: {
      subscribe: ['names'],
      async prepare(state: GreetState | undefined) {
        const events = await Topics.peek<{ file: string }>({ topic: 'names', limit: 1 });
        if (events.length === 0) return { reservations: [], data: null };
        const ev = events[0];
        const file = await Files.read({ path: 'inbox/' + ev.payload.file });
        const data: Greeting = { file: ev.payload.file, name: file.content.trim(), count: (state?.count ?? 0) + 1 };
        return { reservations: [{ topic: 'names', ids: [ev.id] }], data };
      },
      async mutate(d: Greeting | null | undefined) {
        if (!d) return;
        await Files.write({ path: 'outbox/' + d.file, content: 'Hello, ' + d.name + '!\n' });
      },
      async next(d: Greeting | null | undefined, result: MutationResult) {
        if (!d) return undefined; // nothing reserved: keep the state
        console.log('greeted ' + d.name + ' (' + result.status + ')');
        return { count: d.count };
      },
    },
  },
} satisfies Workflow;
`

const starterFixture = `{
  "description": "One file in inbox/: scan publishes it, greet writes outbox/world.txt and logs it.",
  "responses": [
    {
      "tool": "Files.list",
      "match": {
        "exact": {
          "dir": "inbox"
        }
      },
      "result": [
        {
          "name": "world.txt",
          "size": 6,
          "dir": false
        }
      ]
    },
    {
      "tool": "Files.read",
      "match": {
        "exact": {
          "path": "inbox/world.txt"
        }
      },
      "result": {
        "content": "world\n"
      }
    },
    {
      "tool": "Files.write",
      "match": {
        "subset": {
          "path": "outbox/world.txt"
        }
      },
      "result": {
        "path": "outbox/world.txt",
        "bytes": 14
      }
    }
  ],
  "expect": {
    "mutations": [
      {
        "tool": "Files.write",
        "input": {
          "content": "Hello, world!\n",
          "path": "outbox/world.txt"
        },
        "status": "applied"
      }
    ],
    "published": [
      {
        "topic": "names",
        "id": "world.txt",
        "payload": {
          "file": "world.txt"
        }
      }
    ],
    "state": {
      "greet": {
        "count": 1
      },
      "scan": {
        "seen": [
          "world.txt"
        ]
      }
    },
    "runs": [
      {
        "handler": "scan",
        "status": "committed"
      },
      {
        "handler": "greet",
        "status": "committed"
      }
    ],
    "console": [
      "[greet] greeted world (applied)"
    ]
  }
}
`

const starterREADME = "# {{dir}}\n\n" +
	"A scripthost workflow: `{{wf}}`. The producer `scan` publishes one event per file in\n" +
	"`inbox/`; the consumer `greet` writes a greeting to `outbox/` as its one mutation.\n\n" +
	"Test it against the recorded tool responses in `fixtures/` (no file is touched):\n\n" +
	"    scripthost test {{dir}}/{{wf}}\n\n" +
	"After changing the workflow, look at the report's diff, then accept the new behaviour\n" +
	"with `scripthost test {{dir}}/{{wf}} --update`. Run it for real on this directory:\n\n" +
	"    scripthost --db {{dir}}.db run {{dir}}/{{wf}} --once --workspace {{dir}}\n\n" +
	"The fixture format is described in docs/testing.md of the scripthost repository.\n"
