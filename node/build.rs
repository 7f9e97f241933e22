//! Links the addon the way Node expects (napi-build sets the platform flags).

fn main() {
    napi_build::setup();
}
