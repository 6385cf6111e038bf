import DAOCore
