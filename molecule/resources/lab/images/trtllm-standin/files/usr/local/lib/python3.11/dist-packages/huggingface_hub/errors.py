"""The exception classes of huggingface_hub.errors, with the same hierarchy (lab stand-in)."""


class HfHubHTTPError(Exception):
    def __init__(self, message, response=None, server_message=None):
        super().__init__(message)
        self.response = response
        self.server_message = server_message


class RepositoryNotFoundError(HfHubHTTPError):
    pass


class GatedRepoError(RepositoryNotFoundError):
    pass


class DisabledRepoError(HfHubHTTPError):
    pass


class RevisionNotFoundError(HfHubHTTPError):
    pass


class EntryNotFoundError(HfHubHTTPError):
    pass


class LocalEntryNotFoundError(EntryNotFoundError, FileNotFoundError, ValueError):
    pass


class LocalTokenNotFoundError(EnvironmentError):
    pass


class OfflineModeIsEnabled(ConnectionError):
    pass
