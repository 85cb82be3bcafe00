//! A generator of `sed` scripts and `awk` programs from the shapes their
//! grammars have (labels, `v`, addresses with flags, brackets that hold the
//! delimiter; regexes after `print`, `~`, `(`, a condition's `)`, divisions
//! after operands, print lists that go on past a newline), with an attack
//! command placed where the real program reads a command: the judge must
//! refuse the script with the attack, and accept it without.

/// The input, read as a stream of choices.
pub struct Choices<'a>(pub &'a [u8]);

impl Choices<'_> {
    pub fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }

    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> Option<&'t T> {
        if items.is_empty() {
            return None;
        }
        let at = usize::from(self.byte()?) % items.len();
        items.get(at)
    }
}

/// sed commands that run, write or read nothing; each ends where a next
/// command may start after one of `SED_SEPARATORS`.
const SED_SAFE: &[&str] = &[
    "p",
    "d",
    "=",
    "n",
    "N",
    "x",
    "G",
    "h",
    "q",
    "l 5",
    "s/a/b/g",
    "s/[^/]*$//",
    "s/[]/]/X/2",
    "s|x|[|",
    "s/a\\/e/b/p",
    "y/abc/xyz/",
    "/foo/p",
    "/fo[/]o/Id",
    "\\,x,Mp",
    "1,/x/{p;}",
    "$!N",
    "0~2d",
    ":x",
    ":loop",
    "b x",
    "bx",
    "t x",
    "T x",
    // A bare `b` or `v` takes the next word as its label: `;` ends them.
    "b;",
    "v 4.2",
    "v;",
    "s/[[:space:]]*$//",
];

/// What may separate sed commands (a label or `v`'s version ends at
/// whitespace or `;`).
const SED_SEPARATORS: &[&str] = &[" ", "\t", ";", "\n", " ; ", ";\n"];

/// sed commands that run a program or write a file.
const SED_ATTACKS: &[&str] = &[
    "e id",
    "w ../outside/f",
    "s/x/id/e",
    "r /etc/passwd",
    "1e id",
];

/// awk statements that run, write or read nothing (inside `{ }`).
const AWK_SAFE: &[&str] = &[
    "print",
    "print $1",
    "print /#/",
    "printf \"%s\", /#/",
    "x = $1 / 2",
    "x = $1 / 2 / 3",
    "x = a[1] / 2",
    "x = (a) / 2",
    "x = i++ / 2",
    "x = length / 2",
    "x = $0 ~ /#|x/",
    "x = $0 !~ /[/]#/",
    "x = !/#/",
    "x = 1 && /#/",
    "x = 1 || /#/",
    "if (x) /#/",
    "if (x) print /#/",
    "while (n < 3) n++",
    "for (i = 0; i < 3; i++) s += i",
    "print (a > b)",
    "print a,\n b",
    "n = split($0, parts, /,/)",
    "x = \"#\" / 1",
    "s = s \"a/b\"",
    "x = 3 \\\n / 4",
];

/// Rules (pattern-action) that hold the statements.
const AWK_PATTERNS: &[&str] = &[
    "",
    "BEGIN ",
    "END ",
    "/x/ ",
    "/#/ ",
    "NR > 1 ",
    "$1 ~ /#/ ",
    "!/#/ ",
];

/// awk statements that run a program or write a file.
const AWK_ATTACKS: &[&str] = &[
    "system(\"id\")",
    "print | \"sh\"",
    "print > \"out\"",
    "\"id\" | getline",
    "ARGV[1] = \"x\"",
];

/// What separates awk statements.
const AWK_SEPARATORS: &[&str] = &[";", "\n", " ; ", ";\n"];

/// A generated script: `(program, safe, attacked)`.
pub fn generate(c: &mut Choices<'_>) -> Option<(&'static str, String, String)> {
    if c.byte()? % 2 == 0 { sed(c) } else { awk(c) }
}

/// A generated `sed` script: `("sed", safe, attacked)`.
pub fn sed(c: &mut Choices<'_>) -> Option<(&'static str, String, String)> {
    let count = usize::from(c.byte()? % 6) + 1;
    let attack_at = usize::from(c.byte()?) % (count + 1);
    let attack = *c.pick(SED_ATTACKS)?;
    let mut safe = String::new();
    let mut attacked = String::new();
    for i in 0..count {
        let command = *c.pick(SED_SAFE)?;
        let separator = *c.pick(SED_SEPARATORS)?;
        if i == attack_at {
            attacked.push_str(attack);
            attacked.push_str(separator);
        }
        safe.push_str(command);
        attacked.push_str(command);
        if i + 1 < count {
            safe.push_str(separator);
            attacked.push_str(separator);
        }
    }
    if attack_at == count {
        let separator = *c.pick(SED_SEPARATORS)?;
        attacked.push_str(separator);
        attacked.push_str(attack);
    }
    Some(("sed", safe, attacked))
}

/// A generated `awk` program: `("awk", safe, attacked)`.
pub fn awk(c: &mut Choices<'_>) -> Option<(&'static str, String, String)> {
    let pattern = *c.pick(AWK_PATTERNS)?;
    let count = usize::from(c.byte()? % 5) + 1;
    let attack_at = usize::from(c.byte()?) % count;
    let attack = *c.pick(AWK_ATTACKS)?;
    let mut safe = format!("{pattern}{{ ");
    let mut attacked = safe.clone();
    for i in 0..count {
        let statement = *c.pick(AWK_SAFE)?;
        let separator = *c.pick(AWK_SEPARATORS)?;
        if i == attack_at {
            attacked.push_str(attack);
            attacked.push_str(separator);
        }
        safe.push_str(statement);
        attacked.push_str(statement);
        safe.push_str(separator);
        attacked.push_str(separator);
    }
    safe.push('}');
    attacked.push('}');
    Some(("awk", safe, attacked))
}
