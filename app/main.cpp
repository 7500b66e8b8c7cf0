// Placeholder entry point; replaced by the real command dispatcher.
int main() { return 0; }
