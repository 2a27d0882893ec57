//! Every shell block of the README and the guide is marked runnable or illustration, and
//! every runnable one runs: each document's blocks in order, in one bash session (so that a
//! block sees the variables of the blocks before it, as a reader's terminal does), in a
//! temporary folder of its own, with `harness`, `platform` and `customer-kms-sim` the
//! executable this build made (`cargo run -p ... --` is read as that executable), inside a
//! network namespace of its own: the ports the documents name (8080, 8081, 8700) are free
//! whatever else runs on the machine, and every process of a page ends with it. `harness
//! check byok` gets a latency budget of 1000 ms unless the block names one (see `run_page`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use contracts::clock::Stopwatch;

use super::{Block, blocks, documents, parse, root};

const KNOWN: &[&str] = &[
    "runnable",
    "illustration",
    "docker",
    "fresh",
    "http-errors",
    "server",
    "wait",
    "status",
];

#[test]
fn every_shell_block_is_marked_runnable_or_illustration() {
    let mut problems = Vec::new();
    for doc in documents() {
        for b in blocks(&doc).into_iter().filter(Block::is_shell) {
            let runnable = b.has("runnable");
            if runnable == b.has("illustration") {
                problems.push(format!(
                    "{}: mark the block `{} runnable` or `{} illustration`",
                    b.at, b.lang, b.lang
                ));
            }
            for a in &b.attrs {
                let word = a.split('=').next().unwrap_or_default();
                if !KNOWN.contains(&word) {
                    problems.push(format!("{}: unknown word {a:?} in the info string", b.at));
                } else if !runnable && word != "illustration" {
                    problems.push(format!("{}: {a:?} is only for a runnable block", b.at));
                }
            }
            if b.has("server") && b.value("server").is_none() {
                problems.push(format!("{}: server=PORT,...", b.at));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_runnable_blocks_run() {
    let pages: Vec<(String, Vec<Block>)> = documents()
        .iter()
        .map(|d| {
            let name = d.strip_prefix(root()).unwrap().display().to_string();
            let runnable = blocks(d)
                .into_iter()
                .filter(|b| b.is_shell() && b.has("runnable") && !b.has("docker"))
                .collect::<Vec<_>>();
            (name, runnable)
        })
        .filter(|(_, b)| !b.is_empty())
        .collect();
    let count: usize = pages.iter().map(|(_, b)| b.len()).sum();
    assert!(count >= 20, "only {count} runnable blocks were found");

    let isolated = netns_works();
    if !isolated && std::env::var_os("GUIDE_HOST_NETWORK").is_none() {
        panic!(
            "`unshare -rnp --fork` cannot make a network namespace here (or `ip` cannot bring its \
             loopback up), so the documents' \
             ports (8080, 8081, 8700) could collide with other servers; set \
             GUIDE_HOST_NETWORK=1 to run the blocks on this machine's network, one page at a time"
        );
    }
    let started = Stopwatch::start();
    let run = |(name, blocks): &(String, Vec<Block>)| run_page(name, blocks, isolated);
    let failures: Vec<String> = if isolated {
        std::thread::scope(|s| {
            let handles: Vec<_> = pages.iter().map(|p| s.spawn(move || run(p))).collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().unwrap().err())
                .collect()
        })
    } else {
        pages.iter().filter_map(|p| run(p).err()).collect()
    };
    println!(
        "{count} runnable blocks of {} documents ran in {:.1} s",
        pages.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The runner itself: a flag the command lacks, a server that never listens and a request
/// the platform refuses each fail their page.
#[test]
fn a_block_that_fails_fails_its_page() {
    if !netns_works() {
        return; // the_runnable_blocks_run says why
    }
    let pages = [
        "```sh runnable\nharness verify --url http://127.0.0.1:8080 --min-coverag 1\n```\n",
        "```sh runnable server=8080\nharness up --seed not-a-number\n```\n",
        "```sh runnable server=8080,8081\nharness up\n```\n\
         ```sh runnable\ncurl -s http://127.0.0.1:8080/api/app-authoring/v1/orgs/o/workspaces/w/deployments\n```\n",
    ];
    std::thread::scope(|s| {
        let handles: Vec<_> = pages
            .iter()
            .enumerate()
            .map(|(i, text)| {
                s.spawn(move || {
                    let name = format!("probe-{i}.md");
                    (i, run_page(&name, &parse(&name, text), true))
                })
            })
            .collect();
        for h in handles {
            let (i, result) = h.join().unwrap();
            let report = result.expect_err(&format!("probe {i} passed"));
            let expected = ["--min-coverag", "the server ended", "exit status 22"][i];
            assert!(report.contains(expected), "probe {i}: {report}");
        }
    });
}

fn netns_works() -> bool {
    Command::new("unshare")
        .args(["-rnp", "--fork", "sh", "-c", LO_UP])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The loopback interface of a new network namespace is down until brought up.
const LO_UP: &str = "PATH=$PATH:/usr/sbin:/sbin ip link set lo up";

/// Functions every page script starts with.
const PRELUDE: &str = r#"
set -eE -o pipefail
set -m
trap '__rc=$?; echo "guide runner: $__where: exit status $__rc from: $BASH_COMMAND" >&2; exit 1' ERR

# `cargo run [-q] [--release] -p PACKAGE [--bin NAME] -- ARGS`: the executable this build made.
cargo() {
    if [ "$1" != run ]; then
        echo "guide runner: a runnable block runs 'cargo $1': mark it illustration" >&2
        return 97
    fi
    shift
    local pkg=
    while [ $# -gt 0 ]; do
        case $1 in
            --) shift; break ;;
            -p | --package) pkg=$2; shift 2 ;;
            --bin) shift 2 ;;
            -q | --quiet | --release) shift ;;
            *) echo "guide runner: cargo run $1: not understood" >&2; return 97 ;;
        esac
    done
    case $pkg in
        scenarios) harness "$@" ;;
        platform) platform "$@" ;;
        customer-kms-sim) customer-kms-sim "$@" ;;
        *) echo "guide runner: cargo run -p $pkg: no such executable" >&2; return 97 ;;
    esac
}
# A request the documents make must succeed, unless its block says `http-errors`.
curl() {
    local a
    for a in "$@"; do
        # -f (alone or among short flags) already fails on an error status.
        if [[ $a == --fail* || $a =~ ^-[a-zA-Z]*f[a-zA-Z]*$ ]]; then command curl "$@"; return; fi
    done
    if [ -n "${GUIDE_HTTP_ERRORS:-}" ]; then command curl "$@"; else command curl --fail-with-body "$@"; fi
}
export -f cargo curl

__listening() { # PORT: something listens on it, in this network namespace
    local hex
    hex=$(printf ':%04X' "$1")
    awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
__wait_ports() { # PID PORT,PORT...: until each port listens, while PID lives
    local pid=$1 p deadline=$((SECONDS + 30))
    for p in ${2//,/ }; do
        until __listening "$p"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "guide runner: $__where: the server ended before port $p listened" >&2
                return 1
            fi
            if [ "$SECONDS" -ge "$deadline" ]; then
                echo "guide runner: $__where: nothing listens on port $p after 30 s" >&2
                return 1
            fi
            sleep 0.05
        done
    done
}
__fresh() { # a new terminal: no server of the page, none of the variables its blocks set
    __stop_all
    local v
    for v in $(compgen -v); do
        case " $__initial_vars " in *" $v "*) ;; *) [[ $v == __* ]] || unset "$v" 2>/dev/null || true ;; esac
    done
}
__stop_all() { # every background job of the page, as a reader closes the terminals
    local pids p alive
    pids=$(jobs -p)
    [ -n "$pids" ] || return 0
    for p in $pids; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 200); do
        alive=
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -n "$alive" ] || break
        sleep 0.05
    done
    for p in $pids; do kill -KILL -- "-$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
"#;

/// The bash script of one page.
fn script(blocks: &[Block], isolated: bool) -> String {
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(PRELUDE);
    if isolated {
        s.push_str(LO_UP);
        s.push('\n');
    }
    s.push_str("__initial_vars=$(compgen -v | tr '\\n' ' ')\n");
    for (i, b) in blocks.iter().enumerate() {
        let _ = writeln!(s, "\n__where='{}'\necho \"== $__where\"", b.at);
        if b.has("fresh") {
            s.push_str("__fresh\n");
        }
        s.push_str(if b.has("http-errors") {
            "export GUIDE_HTTP_ERRORS=1\n"
        } else {
            "unset GUIDE_HTTP_ERRORS\n"
        });
        let body = with_waits(&b.text, b.value("wait"));
        if let Some(ports) = b.value("server") {
            let _ = writeln!(
                s,
                "( trap - ERR; set +e\n{body}) > server-{i}.log 2>&1 &\n__wait_ports $! {ports}"
            );
        } else if let Some(status) = b.value("status") {
            let _ = writeln!(
                s,
                "__rc=0\n( trap - ERR; set +e\n{body}) || __rc=$?\n\
                 [ \"$__rc\" = {status} ] || {{ echo \"guide runner: $__where: exit status $__rc, not {status}\" >&2; exit 1; }}"
            );
        } else {
            s.push_str(&body);
        }
    }
    s.push_str("\n__where='the end of the page'\n__stop_all\necho '== done'\n");
    s
}

/// `text` with a wait for `ports` after each line that puts a command in the background.
fn with_waits(text: &str, ports: Option<&str>) -> String {
    let Some(ports) = ports else {
        return text.to_string();
    };
    let mut out = String::new();
    let mut heredoc: Option<String> = None;
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        if let Some(i) = line.find("<<") {
            let word = line[i + 2..].trim_start_matches('-').trim();
            let word = word.split_whitespace().next().unwrap_or_default();
            heredoc = Some(word.trim_matches(['\'', '"']).to_string());
            continue;
        }
        let code = line.split(" #").next().unwrap_or_default().trim_end();
        if code.ends_with('&') && !code.ends_with("&&") {
            let _ = writeln!(out, "__wait_ports $! {ports}");
        }
    }
    out
}

fn run_page(name: &str, blocks: &[Block], isolated: bool) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let work = dir.path().join("work");
    for d in [&bin, &work.join("home"), &work.join("tmp")] {
        std::fs::create_dir_all(d).unwrap();
    }
    // One executable under three names, as in the release folder and the image.
    for name in ["platform", "customer-kms-sim"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_harness"), bin.join(name)).unwrap();
    }
    // `harness` itself, except that `check byok` gets the latency budget the project's other
    // tests give it (1000 ms, unless the block names one): the tests share the machine, and
    // the default 250 ms is a budget for a service, not for a loaded test run.
    std::fs::write(
        bin.join("harness"),
        format!(
            "#!/usr/bin/env bash\n\
             if [ \"$1 $2\" = 'check byok' ] && [[ \" $* \" != *' --latency-budget-ms'* ]]; then\n\
             \x20   set -- \"$@\" --latency-budget-ms 1000\n\
             fi\n\
             exec -a harness {:?} \"$@\"\n",
            env!("CARGO_BIN_EXE_harness")
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("harness"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    copy_dir(
        &root().join("scenarios/examples"),
        &work.join("scenarios/examples"),
    );
    let page = dir.path().join("page.sh");
    std::fs::write(&page, script(blocks, isolated)).unwrap();
    let log = dir.path().join("page.log");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = if isolated {
        let mut c = Command::new("unshare");
        c.args(["-rnp", "--fork", "--kill-child", "bash"]);
        c
    } else {
        Command::new("bash")
    };
    let started = Stopwatch::start();
    let mut child = cmd
        .arg(&page)
        .current_dir(&work)
        .env("PATH", path)
        .env("HOME", work.join("home"))
        .env("XDG_STATE_HOME", work.join("home/state"))
        .env("TMPDIR", work.join("tmp"))
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "0")
        .env_remove("BYOK_CLIENT_SECRET")
        .env_remove("BYOK_API_KEY")
        .env_remove("BYOK_EXPECTED_PLAINTEXT")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::options().append(true).open(&log).unwrap())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = started.elapsed().as_secs_f64();
    if status.is_some_and(|s| s.success()) {
        println!("{name}: {} blocks ran in {took:.1} s", blocks.len());
        return Ok(());
    }
    let mut report = format!(
        "{name}: {} after {took:.1} s; its output:\n{}",
        match status {
            Some(s) => format!("the blocks failed ({s})"),
            None => format!("the blocks did not end within {} s", limit.as_secs()),
        },
        tail(&std::fs::read_to_string(&log).unwrap_or_default(), 60)
    );
    for entry in std::fs::read_dir(&work).unwrap().flatten() {
        let p = entry.path();
        if p.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("server-") || n.ends_with(".log")
        }) {
            let _ = write!(
                report,
                "\n--- {}:\n{}",
                p.file_name().unwrap().to_string_lossy(),
                tail(&std::fs::read_to_string(&p).unwrap_or_default(), 20)
            );
        }
    }
    Err(report)
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
