//! docs/COMMANDS.md ends with every command's `--help`, generated from this binary: this test
//! regenerates that part and fails when the document differs (a flag added, renamed or
//! documented anew without the reference following). `ZMEM_BLESS=1` rewrites it instead.

use std::path::Path;
use std::process::Command;

const MARKER: &str =
    "<!-- Generated from the binary's --help below this line; do not edit by hand. -->\n";

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .arg("--help")
        // One width whatever the terminal: clap wraps to COLUMNS.
        .env("COLUMNS", "100")
        .output()
        .expect("zmem runs");
    assert!(out.status.success(), "zmem {args:?} --help: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// The subcommands a help text lists (its `Commands:` section), `help` left out.
fn subcommands(text: &str) -> Vec<String> {
    let Some(i) = text.find("\nCommands:\n") else { return Vec::new() };
    text[i + "\nCommands:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect()
}

fn generate(path: &mut Vec<String>, out: &mut String) {
    let args: Vec<&str> = path.iter().map(String::as_str).collect();
    let text = help(&args);
    let title =
        if path.is_empty() { "zmem".to_string() } else { format!("zmem {}", path.join(" ")) };
    out.push_str(&format!("\n### `{title}`\n\n```text\n{}\n```\n", text.trim_end()));
    for sub in subcommands(&text) {
        path.push(sub);
        generate(path, out);
        path.pop();
    }
}

#[test]
fn the_command_reference_is_the_binarys_help() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/COMMANDS.md");
    let text = std::fs::read_to_string(&doc).expect("docs/COMMANDS.md");
    let at = text.find(MARKER).expect("docs/COMMANDS.md has the generated-part marker");
    let mut generated = String::new();
    generate(&mut Vec::new(), &mut generated);
    assert!(generated.contains("### `zmem lab`") && generated.contains("--apply-script"));
    let want = format!("{}{MARKER}{generated}", &text[..at]);
    if std::env::var_os("ZMEM_BLESS").is_some() {
        std::fs::write(&doc, &want).expect("write docs/COMMANDS.md");
        return;
    }
    if text != want {
        let first = text.lines().zip(want.lines()).position(|(a, b)| a != b);
        panic!(
            "docs/COMMANDS.md differs from the binary's --help (first at line {:?}); \
             ZMEM_BLESS=1 cargo test -p zmem --test commands_doc rewrites it",
            first.map(|i| i + 1)
        );
    }
}
