//! Records the git commit tlblab was built from, for `Environment::tlblab_commit`.
//!
//! `git rev-parse --short=12 HEAD`, plus `-dirty` when `git status --porcelain` lists anything;
//! `unknown` when git or the repository is missing (a source tarball). Cargo reruns this script
//! when HEAD, the branch it points to or the index changes, so a new commit or a `git add` is seen;
//! an edit that is neither committed nor staged is only seen on the next rerun.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
}

fn rerun_if_exists(path: &Path) {
    // A path that does not exist would make cargo rerun the script on every build.
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let dir = Path::new(&manifest_dir);

    let commit = match git(dir, &["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) if !hash.is_empty() => {
            // --no-optional-locks: do not rewrite the index, which would retrigger this script.
            let dirty = git(dir, &["--no-optional-locks", "status", "--porcelain"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}-dirty")
            } else {
                hash
            }
        }
        _ => "unknown".to_owned(),
    };

    if let Some(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) {
        let git_dir = Path::new(&git_dir);
        rerun_if_exists(&git_dir.join("HEAD"));
        rerun_if_exists(&git_dir.join("index"));
        rerun_if_exists(&git_dir.join("packed-refs"));
        if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
            rerun_if_exists(&git_dir.join(branch));
        }
    }
    println!("cargo:rustc-env=TLBLAB_GIT_COMMIT={commit}");
}
