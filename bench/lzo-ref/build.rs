// Links the system liblzo2 (Debian/Ubuntu: liblzo2-dev).
fn main() {
    println!("cargo:rustc-link-lib=lzo2");
}
