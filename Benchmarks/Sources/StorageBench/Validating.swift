import ArgumentParser
import StorageBenchKit

/// Runs `body`, turning a ``ConfigurationError`` it throws into
/// ArgumentParser's `ValidationError`: the commands' one way of saying that
/// an option is wrong (a usage message, exit status 64).
func validating<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as ConfigurationError {
        throw ValidationError(error.message)
    }
}
