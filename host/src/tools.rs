//! Finding the CUDA command-line tools (ptxas, cuobjdump) that the tests and
//! reports use to inspect kernels without a GPU.

use std::path::PathBuf;
use std::process::Command;

/// The path of CUDA tool `name`: `$NAME` (upper case) if set, else `name` on
/// `PATH`, else the copy in the PyPI package `nvidia-cuda-nvcc` (what CI
/// installs); `None` where none is found.
pub fn cuda_tool(name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(name.to_uppercase()) {
        return Some(path.into());
    }
    let which = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .ok()?;
    if which.status.success() {
        return Some(String::from_utf8_lossy(&which.stdout).trim().into());
    }
    let python = Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&python.stdout).trim()).join(name);
    path.is_file().then_some(path)
}
