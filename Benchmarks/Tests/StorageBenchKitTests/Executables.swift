import Foundation

/// Writes `text` to an executable file at `url` through another process
/// (`install`): a file this process writes and then runs can fail with "Text
/// file busy" (ETXTBSY) when another test forks while it is open for writing,
/// as the child holds the descriptor until it runs its own program (or for
/// good, without close-on-exec).
func writeExecutable(_ text: String, to url: URL) throws {
    let source = url.appendingPathExtension("source")
    try Data(text.utf8).write(to: source)
    let install = Process()
    install.executableURL = URL(fileURLWithPath: "/usr/bin/install")
    install.arguments = ["-m", "755", source.path, url.path]
    try install.run()
    install.waitUntilExit()
    guard install.terminationStatus == 0 else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
}
