"""The workspace: its files confined to one root, opened by views through opaque host resources."""
