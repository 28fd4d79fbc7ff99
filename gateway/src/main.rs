fn main() {
    println!("vestibule: not built yet");
}
