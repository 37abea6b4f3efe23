fn main() {
    clustered_builder::build("kernels");
}
