#!/usr/bin/env python3
"""Regenerate git's allow-list grammar, `crates/shell/src/git_rules.toml`.

Each subcommand's options are read from git's own documentation on this
machine: `git <subcommand> -h` (exact for builtins using parse-options),
`git diff -h` (the diff options of log, show, ...), and the manual page
(`man git-<subcommand>`, for revision options); when they disagree, `-h`
wins, and a flag/value conflict in the manual reads as a flag (a value
would hide the next argument from the grammar). The curated parts are kept:
the file's head (git's own options and the rules of the program table), its
tail (refused subcommands and `git config`), and the lists below (each
subcommand's refusals and what it writes).

    python3 crates/shell/tools/gen_git_rules.py > /tmp/git_rules.toml
    diff crates/shell/src/git_rules.toml /tmp/git_rules.toml

Review the difference before replacing the file: an option added to git
since is allowed only once it is read here, and only if its manual says it
runs nothing and writes nothing the command line does not name.
"""
import os
import re
import subprocess
import tempfile

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'git_rules.toml')


def curated_parts():
    """The file's curated head and tail, around the generated subcommands."""
    text = open(RULES).read()
    first = text.index('[[program.grammar.subcommands]]')
    tail = text.index('[[program.grammar.subcommands]]\nname = "apply"')
    return text[:first], text[tail:]


# Outside any repository: inside one, `git diff -h` prints a short usage
# instead of its options.
OUTSIDE = tempfile.mkdtemp()


def run(cmd):
    env = dict(os.environ, MANWIDTH="250", LANG="C", GIT_CEILING_DIRECTORIES=OUTSIDE)
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env, cwd=OUTSIDE)
    return p.stdout + p.stderr

SPEC_SPLIT = re.compile(r',\s+(?=-)')

def parse_spec(spec, out, source):
    """spec: one option spelling like `--[no-]jobs <n>` or `-U<n>`; adds to out {name: kind}."""
    spec = spec.strip()
    if not spec.startswith('-'):
        return
    m = re.match(r'^(--?)(\[no-\])?([A-Za-z0-9][A-Za-z0-9_\-]*|<number>|<n>|<num>)(.*)$', spec)
    if not m:
        return
    dashes, neg, name, rest = m.groups()
    if name in ('<number>', '<n>', '<num>'):
        out.setdefault('__digits__', 'digits')
        return
    rest = rest.strip()
    if rest.startswith('-'):
        parse_spec(dashes + name, out, source)
        for tok in rest.split():
            parse_spec(tok, out, source)
        return
    if dashes == '--':
        if rest.startswith('[='):
            kind = 'optional'
        elif rest.startswith('=') or rest.startswith('<') or rest.startswith('(') or rest.startswith('{'):
            kind = 'value'
        elif rest.startswith('[<') or rest.startswith('['):
            # `--foo [<x>]`: treat as flag (value would be an operand)
            kind = 'flag'
        else:
            kind = 'flag'
    else:
        # short: name is first char; rest of name is attached value spelled
        if len(name) > 1:
            # -L<start>: regex took letters; only first char is the option
            rest = name[1:] + rest
            name = name[0]
            if rest and rest[0].isalnum() and not rest.startswith('<'):
                # something like -Ofoo? treat as value
                pass
            kind = 'value'
        if rest.startswith('[') :
            kind = 'optional'
        elif rest.startswith('<') or rest.startswith('{') or rest.startswith('('):
            kind = 'value'
        elif rest == '':
            kind = 'flag'
        else:
            kind = 'value' if len(name) == 1 and rest else 'flag'
    names = [dashes + name]
    if neg:
        names.append('--no-' + name)
    for n in names:
        prev = out.get(n)
        if prev is None:
            out[n] = kind
        elif prev != kind:
            # merge: optional with flag -> optional; value with flag -> conflict
            pair = {prev, kind}
            if pair == {'flag', 'optional'}:
                out[n] = 'optional'
            elif pair == {'value', 'optional'}:
                out[n] = 'optional'
            else:
                out[n] = 'conflict:' + prev + '/' + kind

def parse_group(text, out, source):
    specs = SPEC_SPLIT.split(text.strip())
    group = {}
    for spec in specs:
        parse_spec(spec, group, source)
    kinds = [k for n, k in group.items() if n.startswith('--') and not n.startswith('--no-') or len(n) == 2]
    last = {}
    parse_spec(specs[-1], last, source)
    lastkind = next((k for n, k in last.items() if not n.startswith('--no-') or len(last) == 1), None)
    for n, k in group.items():
        if n == '__digits__':
            out['__digits__'] = 'digits'; continue
        if source == 'help' and k == 'flag' and lastkind in ('value', 'optional') and len(specs) > 1 and not n.startswith('--no-'):
            k = lastkind
        if n.startswith('--no-') and source == 'help':
            # negations take no value, unless the option's own name is no-...
            base = n[5:]
            if '--' + base in group:
                k = 'flag'
        merge(out, n, k)

def merge(out, n, kind):
    prev = out.get(n)
    if prev is None:
        out[n] = kind
    elif prev != kind:
        pair = {prev, kind}
        if pair == {'flag', 'optional'} or pair == {'value', 'optional'}:
            out[n] = 'optional'
        else:
            out[n] = 'conflict:' + prev + '/' + kind

def from_help(sub):
    text = run(f'git {sub} -h')
    out = {}
    for line in text.splitlines():
        m = re.match(r'^ {4}(-.*?)(?:\s{2,}.*)?$', line)
        if not m:
            continue
        parse_group(m.group(1), out, 'help')
    return out

def from_usage(sub):
    text = run(f'git {sub} -h')
    out = {}
    # usage lines: bracketed options like [-q | --quiet] [--version=<version>]
    for line in text.splitlines():
        if line.startswith('usage:') or line.lstrip().startswith('or:') or line.startswith('   ') and '[' in line and not line.startswith('    -'):
            for m in re.finditer(r'(?<![\w-])(--?(?:\[no-\])?[A-Za-z0-9][A-Za-z0-9\-]*(?:=<[^>]*>|\[=<[^>]*>\]| <[^>]*>)?)', line):
                parse_spec(m.group(1), out, 'usage')
    return out

def from_man(sub):
    text = run(f'man git-{sub} 2>/dev/null | col -bx')
    out = {}
    piece = re.compile(r'^--?[\[\]A-Za-z0-9=<>|.:_{}()\-]*( <[^>]*>)?$')
    for line in text.splitlines():
        m = re.match(r'^ {7}(-\S.*)$', line)
        if not m:
            m = re.match(r'^ {11}(-\S.*)$', line)
            if not m or len(line) > 110 or not all(piece.match(p) for p in SPEC_SPLIT.split(m.group(1).strip())):
                continue
        body = m.group(1)
        parse_group(body, out, 'man')
    return out



GIT_VERSION = subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]

DIFF_FAMILY = {'diff', 'diff-files', 'diff-index', 'diff-tree', 'log', 'show', 'whatchanged',
               'format-patch', 'range-diff', 'stash', 'rev-list'}
MAN_ALIAS = {'whatchanged': 'log', 'annotate': 'blame'}

SUBS = ("add annotate archive blame branch bundle cat-file check-attr check-ignore checkout cherry "
        "cherry-pick clean clone commit count-objects describe diff diff-files diff-index diff-tree "
        "fetch for-each-ref format-patch fsck grep hash-object help init log ls-files ls-remote ls-tree "
        "merge merge-base mv name-rev notes pull push range-diff rebase reflog remote reset restore "
        "rev-list rev-parse revert rm shortlog show show-branch show-ref stash status stripspace switch "
        "tag var version whatchanged worktree bisect").split()

EDITOR = "runs an editor program"
STRATEGY = ("runs `git-merge-<name>`, a program git looks up in its exec path and `PATH`; "
            "the default strategy needs no option (tune it with -X)")
EXT_DIFF = "runs the external diff program configured for the repository; read the built-in diff instead"
TEXTCONV = "runs the text conversion filter programs configured for the repository"

REFUSE = {
    'add': [('-e', "runs an editor program on the diff"), ('--edit', "runs an editor program on the diff")],
    'annotate': [('--textconv', TEXTCONV)],
    'archive': [('-o', "writes the archive to a file that is not judged for writing; write it to standard output"),
                ('--remote', "asks another repository, through a program")],
    'blame': [('--textconv', TEXTCONV)],
    'branch': [('--edit-description', EDITOR)],
    'cat-file': [('--textconv', TEXTCONV), ('--filters', "runs the filter programs configured for the repository")],
    'cherry-pick': [('-e', EDITOR), ('--edit', EDITOR), ('--strategy', STRATEGY)],
    'clean': [('-f', "removes files the command line does not name, so they cannot be judged; list them with -n and remove them by name"),
              ('--force', "removes files the command line does not name, so they cannot be judged; list them with -n and remove them by name"),
              ('-i', "removes files chosen interactively, which cannot be judged"),
              ('--interactive', "removes files chosen interactively, which cannot be judged")],
    'clone': [('-u', "runs a program as the upload-pack"),
              ('--separate-git-dir', "puts the repository somewhere not judged"),
              ('-c', "sets configuration (core.fsmonitor, core.sshCommand, ...) that runs programs in the new repository"),
              ('--config', "sets configuration (core.fsmonitor, core.sshCommand, ...) that runs programs in the new repository")],
    'commit': [('-c', "runs an editor program on the reused message (-C reuses it as it is)"),
               ('--reedit-message', "runs an editor program on the reused message (--reuse-message reuses it as it is)"),
               ('-e', EDITOR), ('--edit', EDITOR),
               ('-t', "runs an editor program on a template; give the message with -m or -F")],
    'diff': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'diff-files': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'diff-index': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'diff-tree': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'format-patch': [('-o', "writes patches into a directory that is not judged for writing"),
                     ('--output-directory', "writes patches into a directory that is not judged for writing"),
                     ('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'grep': [('-O', "runs a pager program on the files found"), ('--ext-grep', "runs an external grep"),
             ('--textconv', TEXTCONV)],
    'help': [('-w', "runs a web browser"), ('--web', "runs a web browser"),
             ('-i', "runs the info program"), ('--info', "runs the info program"),
             ('-m', "runs the man program"), ('--man', "runs the man program")],
    'init': [('--separate-git-dir', "puts the repository somewhere not judged")],
    'log': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'merge': [('-e', EDITOR), ('--edit', EDITOR), ('-s', STRATEGY), ('--strategy', STRATEGY)],
    'notes': [('-c', "runs an editor program on the reused note (-C reuses it as it is)"),
              ('--reedit-message', "runs an editor program on the reused note (--reuse-message reuses it as it is)")],
    'pull': [('-e', EDITOR), ('--edit', EDITOR), ('-s', STRATEGY), ('--strategy', STRATEGY)],
    'range-diff': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'rebase': [('-x', "runs a command after each commit"),
               ('--exec', "runs a command after each commit"),
               ('-i', "runs an editor program on the todo list"),
               ('--interactive', "runs an editor program on the todo list"),
               ('--edit-todo', "runs an editor program"),
               ('-s', STRATEGY), ('--strategy', STRATEGY)],
    'revert': [('-e', EDITOR), ('--edit', EDITOR), ('--strategy', STRATEGY)],
    'reflog': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'rev-list': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'hash-object': [('--filters', "runs the filter programs configured for the repository on the file")],
    'show': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'stash': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
    'tag': [('-e', EDITOR), ('--edit', EDITOR)],
    'whatchanged': [('--ext-diff', EXT_DIFF), ('--textconv', TEXTCONV)],
}

# Options refused by the git table for every subcommand (spelled on any
# prefix): never listed in a subcommand grammar.
ANYWHERE = {'--exec-path', '--config-env', '--upload-pack', '--receive-pack', '--exec', '--extcmd',
            '--open-files-in-pager', '--output', '--template', '--work-tree', '--paginate', '--help'}

EXTRA = {
    'help': {'max_operands': 0,
             'operands_reason': "shows a manual page through the man program; `git <command> -h` prints the command's options"},
    'bisect': {'refuse_operands': [('run', "runs a program at every step"),
                                   ('visualize', "runs gitk or a pager program"),
                                   ('view', "runs gitk or a pager program")]},
    'notes': {'refuse_operands': [('edit', EDITOR)]},
    'stash': {},
    'clone': {'writes_from': 1, 'writes_default': 'source-name', 'writes_repository': True},
    'init': {'writes_from': 0, 'writes_default': 'working-directory', 'writes_repository': True},
    'worktree': {'writes_from': 1, 'writes_repository': True},
    'bundle': {'writes_from': 1},
    'checkout': {'writes_from': 0},
    'restore': {'writes_from': 0},
    'rm': {'writes_from': 0},
    'mv': {'writes_from': 0},
}

# Corrections to what the parser reads (checked against git's behaviour).
OVERRIDES = {
    # `git stash push -S` (staged) and `-m <message>`, not diff's `-S<string>`.
    'stash': {'-S': 'flag', '-m': 'value', '--message': 'value'},
    # `git diff --cached`/`--staged`/`--merge-base` are in the manual's
    # description, not its option list.
    'diff': {'--cached': 'flag', '--staged': 'flag', '--merge-base': 'flag'},
    # `git bundle create FILE <rev-list args>`.
    'bundle': {'--all': 'flag', '--branches': 'optional', '--tags': 'optional', '--remotes': 'optional',
               '--not': 'flag', '--glob': 'value', '--since': 'value', '--max-count': 'value'},
    # `git --list-cmds` in the usage line is git's own option, not log's.
}
# Paths read from a file are written without the command line naming them.
FROM_FILE = ('--pathspec-from-file', "reads the paths it writes from a file, so they are not judged; name them")
for _sub in ('checkout', 'restore', 'rm', 'stash'):
    REFUSE.setdefault(_sub, []).append(FROM_FILE)

DIGITS = {'show', 'reflog'}
# Subcommands that also take another's options: `git reflog show` is
# `git log -g`.
ALSO = {'reflog': 'log'}

def kinds_for(sub):
    man = from_man(MAN_ALIAS.get(sub, sub))
    out = {}
    digits = '__digits__' in man
    def take(src, prefer):
        nonlocal digits
        for n, k in src.items():
            if n == '__digits__':
                digits = True
                continue
            if k.startswith('conflict'):
                k = 'flag'
            if prefer or n not in out:
                out[n] = k
    take(man, False)
    if sub in DIFF_FAMILY and sub != 'diff':
        take(from_help('diff'), True)
    own = from_help(sub if sub != 'whatchanged' else 'log')
    take(own, True)
    take(from_usage(sub if sub != 'whatchanged' else 'log'), False)
    if sub in ALSO:
        take(kinds_for(ALSO[sub])[0], False)
    out.update(OVERRIDES.get(sub, {}))
    return out, digits or sub in DIGITS

def q(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'

def toml_list(xs):
    return '[' + ', '.join(q(x) for x in xs) + ']'

def main():
    head, tail = curated_parts()
    print(head, end='')
    subs_out = []
    for sub in SUBS:
        kinds, digits = kinds_for(sub)
        refused = {o for o, _ in REFUSE.get(sub, [])}
        kinds = {n: k for n, k in kinds.items() if n not in refused and n not in ANYWHERE}
        kinds.setdefault('-h', 'flag')
        flags = sorted(n for n, k in kinds.items() if k == 'flag')
        values = sorted(n for n, k in kinds.items() if k == 'value')
        optional = sorted(n for n, k in kinds.items() if k == 'optional')
        lines = ['[[program.grammar.subcommands]]', f'name = {q(sub)}']
        ex = EXTRA.get(sub, {})
        if 'max_operands' in ex:
            lines.append(f"max_operands = {ex['max_operands']}")
            lines.append(f"operands_reason = {q(ex['operands_reason'])}")
        if 'writes_from' in ex:
            lines.append(f"writes_from = {ex['writes_from']}")
        if 'writes_default' in ex:
            lines.append(f"writes_default = {q(ex['writes_default'])}")
        if ex.get('writes_repository'):
            lines.append("writes_repository = true")
        if REFUSE.get(sub):
            lines.append('refuse = [')
            for o, r in REFUSE[sub]:
                lines.append(f'    {{ option = {q(o)}, reason = {q(r)} }},')
            lines.append(']')
        if ex.get('refuse_operands'):
            lines.append('refuse_operands = [')
            for o, r in ex['refuse_operands']:
                lines.append(f'    {{ operand = {q(o)}, reason = {q(r)} }},')
            lines.append(']')
        lines.append('')
        lines.append('[program.grammar.subcommands.grammar]')
        lines.append(f'flags = {toml_list(flags)}')
        if values:
            lines.append(f'values = {toml_list(values)}')
        if optional:
            lines.append(f'optional = {toml_list(optional)}')
        if digits:
            lines.append('digits = true')
        subs_out.append('\n'.join(lines))
    print('\n\n'.join(subs_out))
    print()
    print(tail, end='')



if __name__ == '__main__':
    main()
