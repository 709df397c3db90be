//! The fault table, written out for people: the `--help` entries and the
//! README's table of faults.

use super::spec::{FAULTS, IfAbsent, ParamSpec};

/// Help lines wrap at this column.
const HELP_WIDTH: usize = 80;
/// Where the description of a fault starts in `--help`.
const HELP_ABOUT_COLUMN: usize = 29;

/// `--help`'s entry for every fault: its syntax and what it does, its
/// parameters with their defaults, and an example `curl`.
pub(crate) fn help_entries() -> String {
    let mut out = String::new();
    for spec in FAULTS {
        let syntax = format!("  {}", spec.syntax());
        let lead = if syntax.len() < HELP_ABOUT_COLUMN - 1 {
            format!("{syntax:<HELP_ABOUT_COLUMN$}")
        } else {
            format!("{syntax}  ")
        };
        wrap(&mut out, &lead, HELP_ABOUT_COLUMN, spec.about);
        if !spec.params.is_empty() {
            let params: Vec<String> = spec.params.iter().map(help_param).collect();
            wrap(&mut out, "      takes ", 8, &params.join(", "));
        }
        out.push_str("    ");
        out.push_str(spec.example);
        out.push('\n');
    }
    out
}

fn help_param(param: &ParamSpec) -> String {
    match param.if_absent {
        IfAbsent::Required => format!("{} (required)", param.syntax()),
        IfAbsent::Unset => param.syntax(),
        IfAbsent::Default(value) => format!("{} (default {value})", param.syntax()),
    }
}

/// Appends `text` after `lead`, wrapped at [`HELP_WIDTH`] with later lines
/// indented by `indent`; a word longer than a line gets a line of its own.
fn wrap(out: &mut String, lead: &str, indent: usize, text: &str) {
    let mut line = lead.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.len() + 1 + word.len() > HELP_WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// The README's fault table: generated from the table, and checked against it.
#[cfg(test)]
mod readme {
    use super::*;
    use crate::fault::FAULT_NAMES;

    /// The lines around the generated table in the README.
    const BEGIN: &str = "<!-- fault table: generated from src/fault/spec.rs; \
                         `SEAWALL_CHAOS_BLESS=1 cargo test -p seawall-chaos readme` rewrites it -->\n";
    const END: &str = "<!-- end of fault table -->\n";

    /// The README's table of faults, header included.
    fn readme_table() -> String {
        let mut out = String::from(
            "| Fault | Parameters (default) | What goes over the wire |\n\
             |-------|----------------------|-------------------------|\n",
        );
        for spec in FAULTS {
            let params: Vec<String> = spec.params.iter().map(readme_param).collect();
            let params = if params.is_empty() {
                "—".to_owned()
            } else {
                params.join(", ")
            };
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                spec.name,
                cell(&params),
                cell(spec.about)
            ));
        }
        out
    }

    fn readme_param(param: &ParamSpec) -> String {
        match param.if_absent {
            IfAbsent::Required => format!("`{}` (required)", param.syntax()),
            IfAbsent::Unset => format!("`{}`", param.syntax()),
            IfAbsent::Default(value) => format!("`{}` ({value})", param.syntax()),
        }
    }

    /// Text fit for a Markdown table cell: `|` escaped.
    fn cell(text: &str) -> String {
        text.replace('|', "\\|")
    }

    fn readme_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")
    }

    /// The README's text and the byte range of its generated table.
    fn readme() -> (String, std::ops::Range<usize>) {
        let text = std::fs::read_to_string(readme_path()).expect("README.md");
        let start = text
            .find(BEGIN)
            .expect("README lacks the fault table's BEGIN line")
            + BEGIN.len();
        let end = start
            + text[start..]
                .find(END)
                .expect("README lacks the fault table's END line");
        (text, start..end)
    }

    #[test]
    fn readme_fault_table_lists_exactly_the_table_names() {
        let (text, table) = readme();
        let names: Vec<&str> = text[table]
            .lines()
            .filter_map(|row| row.strip_prefix("| `"))
            .filter_map(|row| row.split('`').next())
            .collect();
        assert_eq!(names, FAULT_NAMES, "README fault table and FAULTS disagree");
    }

    #[test]
    fn readme_fault_table_is_generated_from_the_table() {
        let (mut text, table) = readme();
        let generated = readme_table();
        if std::env::var_os("SEAWALL_CHAOS_BLESS").is_some() {
            text.replace_range(table, &generated);
            std::fs::write(readme_path(), text).expect("README.md written");
            return;
        }
        assert_eq!(
            text[table], generated,
            "README fault table is stale: run SEAWALL_CHAOS_BLESS=1 cargo test -p seawall-chaos readme"
        );
    }

    #[test]
    fn readme_shows_every_example() {
        let (text, _) = readme();
        for spec in FAULTS {
            assert!(
                text.contains(spec.example),
                "README lacks `{}`",
                spec.example
            );
        }
    }
}
